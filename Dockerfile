# Wishpay: one image for every process role. The command chooses the role:
#   serve (default), serve --no-jobs, worker, migrate, keys create|list|revoke.
# See docs/operations.md. There is no TypeScript build step: tsx, a runtime dependency,
# runs src/ directly (bin/wishpay.js registers it).

# ---- build: production dependencies, with the toolchain for better-sqlite3 ----------------------
FROM node:20-bookworm-slim AS build

# better-sqlite3 is a native module: its install script downloads a prebuilt binary and falls back
# to compiling it with node-gyp, which needs python3, make and g++.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force
# Fail the build here if the native binary is missing. `require('better-sqlite3')` alone would not
# notice: the binary is loaded when the first database is opened.
RUN node -e "new (require('better-sqlite3'))(':memory:').close()"

# ---- runtime ----------------------------------------------------------------------------------------
FROM node:20-bookworm-slim

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data

WORKDIR /app
# Owned by root and read-only to the process; only DATA_DIR (and /tmp, for tsx's cache) is written.
COPY --from=build /app/node_modules ./node_modules
# tsx reads tsconfig.json at run time (e.g. verbatimModuleSyntax), as in development and tests.
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src

# The embedded SQLite store (used only when DATABASE_URL is unset) lives in DATA_DIR.
# The directory is created and handed to `node` before VOLUME, so a new volume inherits the owner.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]

USER node

# Smoke test at build time: loads every module through tsx (so a missing file fails the build) and
# leaves tsx's compile cache in /tmp/tsx-<uid>, which shortens the first start of a container.
RUN node bin/wishpay.js --help > /dev/null

EXPOSE 3000

# Liveness only (/healthz). A `worker` or `migrate` container has no HTTP server: turn this off for
# them (docker-compose.yml does). PORT is read from the container's environment.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# Exec form: node is the process that receives SIGTERM and shuts down gracefully.
ENTRYPOINT ["node", "bin/wishpay.js"]
CMD ["serve"]
