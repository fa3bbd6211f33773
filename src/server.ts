import type { Logger } from 'pino'
import { buildApp } from './app.js'
import type { Config } from './config.js'
import { type Database, openConfiguredDatabase } from './db/database.js'
import { dialectOf } from './db/dialect.js'
import { migrateToLatest } from './db/migrate.js'
import { createMetrics } from './http/metrics.js'
import { createBackgroundWork } from './jobs/index.js'
import { releaseAll } from './modules/queue/repository.js'
import { systemClock } from './lib/clock.js'
import { createLogger } from './logger.js'
import { developmentKeyBanner, ensureDevelopmentKey } from './modules/accounts/bootstrap.js'
import { createServices } from './services.js'

async function openAndMigrate(config: Config, logger: Logger): Promise<Database> {
  // Migrations get their own connection without the serving query timeout: waiting for another
  // process's migration lock may take longer.
  const migrating = openConfiguredDatabase(config, { queryTimeoutMs: 0, poolSize: 1 })
  try {
    const applied = await migrateToLatest(migrating)
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated')
  } finally {
    await migrating.close()
  }
  const db = openConfiguredDatabase(config)
  // The embedded store has one process at a time: leases left behind are from one that died.
  if (db.singleProcess) await releaseAll(db.kysely)
  return db
}

/**
 * The command that makes the first key, for a first start that made none itself (PostgreSQL, or
 * production). The URL is not repeated: it may hold a password.
 */
function firstKeyCommand(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  return `${config.databaseUrl ? 'DATABASE_URL=…' : `DATA_DIR=${config.dataDir}`} npx wishpay keys create --account NAME`
}

/** Runs `stop` once on SIGTERM or SIGINT, then exits 0 (1 if stopping failed). */
function onSignal(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false
  const handle = (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down')
    stop().then(() => process.exit(0), (error: unknown) => {
      logger.error({ err: error }, 'shutdown failed')
      process.exit(1)
    })
  }
  process.once('SIGTERM', () => handle('SIGTERM'))
  process.once('SIGINT', () => handle('SIGINT'))
}

/** `wishpay serve`: migrate, bootstrap, listen, run background jobs (unless told not to), stop cleanly. */
export async function serve(config: Config, options: { jobs: boolean } = { jobs: true }): Promise<void> {
  const logger = createLogger(config)
  const db = await openAndMigrate(config, logger)
  const clock = systemClock
  const services = createServices({ config, db, clock })
  const created = await ensureDevelopmentKey(config, services.accounts)
  const keyless = !created && !(await services.accounts.hasAnyAccount())
  // Wishpay's receipt signing key, made on first start (src/modules/receipts/signing-keys.ts).
  await services.receipts.ensureSigningKey()
  const metrics = createMetrics({ db, clock })
  const lifecycle = { draining: false }
  const app = await buildApp({ config, db, clock, logger, services, metrics, lifecycle })
  const jobs = options.jobs
    ? createBackgroundWork({ db, clock, config, logger, payments: services.payments, onDelivery: metrics.webhookDelivery })
    : undefined

  const address = await app.listen({ port: config.port, host: config.host })
  jobs?.start()
  logger.info({ address, store: dialectOf(db.kysely), jobs: options.jobs }, 'wishpay listening')
  // Straight to the terminal, never through the logger: logs must not hold keys.
  if (created) process.stdout.write(developmentKeyBanner(created, address.replace('0.0.0.0', '127.0.0.1')))
  // Without a key nothing but the open routes answers: say how to make one, with the same environment.
  if (keyless) {
    const command = firstKeyCommand(config)
    logger.warn({ command }, `no API keys yet: create one with \`${command}\`${config.databaseUrl ? ' (… is this server\'s DATABASE_URL)' : ''}`)
  }

  // While draining, answers close their connection, so keep-alive clients cannot hold the server open.
  app.server.on('request', (_request, response) => { if (lifecycle.draining) response.shouldKeepAlive = false })

  onSignal(logger, async () => {
    // Stop accepting and let in-flight requests finish, within the bound; the runner finishes the job in
    // hand and hands back the ones it had claimed. Then the database goes.
    lifecycle.draining = true
    // Connections go idle once answered: close them as they do. Only from 500 ms after the listener has
    // closed, so that a connection accepted just before gets its request in (and a 503), not a reset.
    let listenerClosedAt: number | undefined
    const closeIdle = setInterval(() => {
      if (app.server.listening) return
      listenerClosedAt ??= Date.now()
      if (Date.now() - listenerClosedAt >= 500) app.server.closeIdleConnections()
    }, 100)
    const overdue = setTimeout(() => {
      logger.warn({ timeout_ms: config.shutdownTimeoutMs }, 'in-flight requests did not finish in time; closing their connections')
      app.server.closeAllConnections()
    }, config.shutdownTimeoutMs)
    await Promise.all([app.close(), jobs?.stop()])
    clearInterval(closeIdle)
    clearTimeout(overdue)
    await db.close()
  })
}

/** `wishpay worker`: background jobs only, for deployments that separate them from the API. */
export async function work(config: Config): Promise<void> {
  const logger = createLogger(config)
  const db = await openAndMigrate(config, logger)
  const clock = systemClock
  const services = createServices({ config, db, clock })
  const jobs = createBackgroundWork({ db, clock, config, logger, payments: services.payments, keepProcessAlive: true })
  jobs.start()
  logger.info({ store: dialectOf(db.kysely) }, 'wishpay worker running')
  onSignal(logger, async () => {
    await jobs.stop()
    await db.close()
  })
}
