import cluster from 'node:cluster'
import type { Logger } from 'pino'
import type { Config } from './config.js'
import { type Database, openConfiguredDatabase } from './db/database.js'
import { dialectOf } from './db/dialect.js'
import { migrateToLatest } from './db/migrate.js'
import { systemClock } from './lib/clock.js'
import { createLogger } from './logger.js'
import { developmentKeyBanner, ensureDevelopmentKey } from './modules/accounts/bootstrap.js'
import { type AccountService, createAccountService, type CreatedKey } from './modules/accounts/service.js'
import { ensureSigningKey } from './modules/receipts/signing-keys.js'
import type { WorkerListening } from './cluster.js'

/**
 * What serving needs beyond the store, loaded on demand: a cluster primary only migrates and supervises,
 * and stays small by never loading the application (Fastify, the routes, the job runner).
 */
async function loadServing() {
  const [{ buildApp }, { createMetrics }, { createBackgroundWork }, { releaseAll }, { createServices }] = await Promise.all([
    import('./app.js'), import('./http/metrics.js'), import('./jobs/index.js'), import('./modules/queue/repository.js'), import('./services.js'),
  ])
  return { buildApp, createMetrics, createBackgroundWork, releaseAll, createServices }
}

async function migrate(config: Config, logger: Logger): Promise<void> {
  // Migrations get their own connection without the serving query timeout: waiting for another
  // process's migration lock may take longer.
  const migrating = openConfiguredDatabase(config, { queryTimeoutMs: 0, poolSize: 1 })
  try {
    const applied = await migrateToLatest(migrating)
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated')
  } finally {
    await migrating.close()
  }
}

async function openAndMigrate(config: Config, logger: Logger): Promise<Database> {
  await migrate(config, logger)
  const db = openConfiguredDatabase(config)
  // The embedded store has one process at a time: leases left behind are from one that died.
  if (db.singleProcess) await (await loadServing()).releaseAll(db.kysely)
  return db
}

interface FirstStart {
  /** The development key made on this start (embedded store, outside production), shown once. */
  created: CreatedKey | undefined
  /** No account has a key yet: the server says how to make one. */
  keyless: boolean
}

/** What a first start makes, once per start of the server (not per cluster worker). */
async function firstStart(config: Config, db: Database, accounts: Pick<AccountService, 'hasAnyAccount' | 'createKey'>): Promise<FirstStart> {
  const created = await ensureDevelopmentKey(config, accounts)
  const keyless = !created && !(await accounts.hasAnyAccount())
  // Wishpay's receipt signing key, made on first start (src/modules/receipts/signing-keys.ts).
  await ensureSigningKey(db, systemClock)
  return { created, keyless }
}

/** After `wishpay listening`: the development key's banner, or how to make a first key. */
function announceFirstStart(config: Config, logger: Logger, address: string, start: FirstStart): void {
  // Straight to the terminal, never through the logger: logs must not hold keys.
  if (start.created) process.stdout.write(developmentKeyBanner(start.created, address.replace('0.0.0.0', '127.0.0.1')))
  // Without a key nothing but the open routes answers: say how to make one, with the same environment.
  if (start.keyless) {
    const command = firstKeyCommand(config)
    logger.warn({ command }, `no API keys yet: create one with \`${command}\`${config.databaseUrl ? ' (… is this server\'s DATABASE_URL)' : ''}`)
  }
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

export interface ServeOptions {
  jobs: boolean
  /**
   * Set in a cluster worker (src/cluster.ts): the primary has migrated and made the first-start keys,
   * and announces `wishpay listening` once every worker listens; this process reports to it instead.
   */
  clusterWorker?: boolean
}

/** `wishpay serve`: migrate, bootstrap, listen, run background jobs (unless told not to), stop cleanly. */
export async function serve(config: Config, options: ServeOptions = { jobs: true }): Promise<void> {
  // A worker's lines carry its pid, so that one can tell which process served a request.
  const logger = options.clusterWorker ? createLogger(config).child({ pid: process.pid }) : createLogger(config)
  const db = options.clusterWorker ? openConfiguredDatabase(config) : await openAndMigrate(config, logger)
  const { buildApp, createMetrics, createBackgroundWork, createServices } = await loadServing()
  const clock = systemClock
  const services = createServices({ config, db, clock })
  const start = options.clusterWorker ? undefined : await firstStart(config, db, services.accounts)
  const metrics = createMetrics({ db, clock })
  const lifecycle = { draining: false }
  const app = await buildApp({ config, db, clock, logger, services, metrics, lifecycle })
  const jobs = options.jobs
    ? createBackgroundWork({ db, clock, config, logger, payments: services.payments, onDelivery: metrics.webhookDelivery })
    : undefined

  const address = await app.listen({ port: config.port, host: config.host })
  jobs?.start()
  const store = dialectOf(db.kysely)
  if (start) {
    logger.info({ address, store, jobs: options.jobs }, 'wishpay listening')
    announceFirstStart(config, logger, address, start)
  } else {
    logger.info({ address, store, jobs: options.jobs }, 'worker listening')
    const report: WorkerListening = { wishpay: 'listening', address, store }
    process.send?.(report)
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
  const { createBackgroundWork, createServices } = await loadServing()
  const services = createServices({ config, db, clock })
  const jobs = createBackgroundWork({ db, clock, config, logger, payments: services.payments, keepProcessAlive: true })
  jobs.start()
  logger.info({ store: dialectOf(db.kysely) }, 'wishpay worker running')
  onSignal(logger, async () => {
    await jobs.stop()
    await db.close()
  })
}

/**
 * `wishpay serve` with WORKERS > 1 (PostgreSQL only: the caller has checked). In the primary: migrate and
 * make the first-start keys once, hold no database after that, fork the workers and supervise them
 * (src/cluster.ts), and log `wishpay listening` once all of them listen on the shared port. In a worker:
 * serve, as one process does.
 */
export async function serveWithWorkers(config: Config, options: { jobs: boolean }): Promise<void> {
  if (cluster.isWorker) return serve(config, { ...options, clusterWorker: true })
  const logger = createLogger(config)
  await migrate(config, logger)
  const db = openConfiguredDatabase(config, { poolSize: 1 })
  let start: FirstStart
  try {
    start = await firstStart(config, db, createAccountService({ db, clock: systemClock }))
  } finally {
    await db.close()
  }
  const { superviseWorkers } = await import('./cluster.js')
  superviseWorkers({
    count: config.workers,
    logger,
    onListening: ({ address, store }, pids) => {
      logger.info({ address, store, jobs: options.jobs, workers: pids.length, worker_pids: pids }, 'wishpay listening')
      announceFirstStart(config, logger, address, start)
    },
  })
}
