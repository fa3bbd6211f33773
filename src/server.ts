import { buildApp } from './app.js'
import type { Config } from './config.js'
import { openConfiguredDatabase } from './db/database.js'
import { migrateToLatest } from './db/migrate.js'
import { systemClock } from './lib/clock.js'
import { createLogger } from './logger.js'
import { developmentKeyBanner, ensureDevelopmentKey } from './modules/accounts/bootstrap.js'
import { createAccountService } from './modules/accounts/service.js'

/** Process entry for `wishpay serve`: migrate, bootstrap, listen, and shut down cleanly on a signal. */
export async function serve(config: Config): Promise<void> {
  const logger = createLogger(config)
  const db = openConfiguredDatabase(config)
  const applied = await migrateToLatest(db)
  if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated')

  const created = await ensureDevelopmentKey(config, createAccountService({ db, clock: systemClock }))
  const app = await buildApp({ config, db, logger })
  const address = await app.listen({ port: config.port, host: config.host })
  logger.info({ address, store: db.dialect }, 'wishpay listening')
  // Straight to the terminal, never through the logger: logs must not hold keys.
  if (created) process.stdout.write(developmentKeyBanner(created, address.replace('0.0.0.0', '127.0.0.1')))

  let closing = false
  const shutdown = async (signal: string) => {
    if (closing) return
    closing = true
    logger.info({ signal }, 'shutting down')
    try {
      await app.close()
      await db.close()
      process.exit(0)
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed')
      process.exit(1)
    }
  }
  process.once('SIGTERM', () => void shutdown('SIGTERM'))
  process.once('SIGINT', () => void shutdown('SIGINT'))
}
