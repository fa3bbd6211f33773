# Wishpay: one image for every process role. The command chooses the role:
#   serve (default), serve --no-jobs, worker, migrate, keys create|list|revoke.
# See docs/operations.md. The image runs the compiled JavaScript (dist/), not src/ through tsx:
# tsx's loader thread costs about 45 MB of memory per process (docs/decisions.md).

# ---- build: dependencies, the toolchain for better-sqlite3, and the TypeScript compile -----------
# Node 24, an LTS line supported to April 2028: Node 20's support ended in April 2026 (the suite passes
# on 20, 22, 24 and 26).
FROM node:24-bookworm-slim AS build

# better-sqlite3 is a native module: its install script downloads a prebuilt binary and falls back
# to compiling it with node-gyp, which needs python3, make and g++.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json package-lock.json ./
# The npm workspace (the SDK): npm ci installs and builds it with the root's TypeScript.
COPY packages ./packages
# All dependencies: the compiler is a development one. They are pruned after the build.
RUN npm ci --no-audit --no-fund
# Fail the build here if the native binary is missing. `require('better-sqlite3')` alone would not
# notice: the binary is loaded when the first database is opened.
RUN node -e "new (require('better-sqlite3'))(':memory:').close()"
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# The dashboard's sources: npm run build builds it into dashboard/dist with Vite.
COPY dashboard ./dashboard
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# ---- runtime ----------------------------------------------------------------------------------------
FROM node:24-bookworm-slim

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data

WORKDIR /app
# Owned by root and read-only to the process; only DATA_DIR is written.
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/dashboard/dist ./dashboard/dist
COPY package.json package-lock.json ./

# The embedded SQLite store (used only when DATABASE_URL is unset) lives in DATA_DIR.
# The directory is created and handed to `node` before VOLUME, so a new volume inherits the owner.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]

USER node

# Smoke test at build time: loads the command's modules, so a missing file or dependency fails the build.
RUN node dist/cli.js --help > /dev/null

EXPOSE 3000

# Liveness only (/healthz). A `worker` or `migrate` container has no HTTP server: turn this off for
# them (docker-compose.yml does). PORT is read from the container's environment.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# Exec form: node is the process that receives SIGTERM and shuts down gracefully.
ENTRYPOINT ["node", "--max-semi-space-size=8", "--max-old-space-size=512", "--no-maglev", "dist/cli.js"]
CMD ["serve"]
