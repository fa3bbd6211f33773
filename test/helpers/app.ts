import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../../src/app.js'
import { type Config, loadConfig } from '../../src/config.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { randomBase62 } from '../../src/lib/ids.js'
import { createBackgroundWork } from '../../src/jobs/index.js'
import type { JobRunner } from '../../src/jobs/runner.js'
import { createAccountService } from '../../src/modules/accounts/service.js'
import { createServices, type Services } from '../../src/services.js'
import { TestClock } from './clock.js'
import { injectEventStream, isEventStream } from './event-stream.js'
import { type Response, toResponse } from './response.js'
import type { StoreKind, TestStore } from './stores.js'

// The response type is test/helpers/response.ts; in-process tests import it from here with the app.
export { parseBody, type Response, toResponse } from './response.js'

export interface TestAccount {
  id: string
  /** A write (sk_) key and a read (rk_) key of this account. */
  key: string
  readKey: string
  keyId: string
  /** An authenticated JSON request as this account (write key unless `key` is given). */
  request(method: InjectOptions['method'], url: string, body?: unknown, options?: { key?: string | null, headers?: Record<string, string> }): Promise<Response>
}

export interface TestApp {
  store: TestStore
  app: FastifyInstance
  clock: TestClock
  config: Config
  services: Services
  /** The background runner on the app's clock, not started: tests call jobs.runOnce() to move time along. */
  jobs: JobRunner
  /** A new account with its own keys: each test makes its own. */
  account(): Promise<TestAccount>
  inject(options: InjectOptions): Promise<Response>
  close(): Promise<void>
}

/** Opens a new store of this kind, migrates it and builds the app around it. */
export async function startTestApp(kind: StoreKind, env: Record<string, string> = {}): Promise<TestApp> {
  const store = await kind.open()
  try {
    await migrateToLatest(store.db)
  } catch (error) {
    await store.close()
    throw error
  }
  const clock = new TestClock()
  // A high rate limit unless a test sets one: concurrency tests fire many requests with one key.
  // Streams wait less than in production (EVENT_STREAM_SETTLE_MS): nothing in a test waits on a lock for long.
  const config = loadConfig({ RATE_LIMIT_PER_SECOND: '1000000', EVENT_STREAM_SETTLE_MS: '200', EVENT_STREAM_POLL_MS: '50', ...env })
  const services = createServices({ config, db: store.db, clock })
  const app = await buildApp({ config, db: store.db, clock, services })
  const accounts = services.accounts
  const silent = { info() {}, warn() {}, error() {} }
  const jobs = createBackgroundWork({ db: store.db, clock, config, logger: silent, payments: services.payments })

  // An event stream never ends: its first chunk stands for its body.
  const inject = async (options: InjectOptions) => toResponse(isEventStream(options.url) ? await injectEventStream(app.inject.bind(app), options) : await app.inject(options))

  return {
    store,
    app,
    clock,
    config,
    services,
    jobs,
    inject,
    async account() {
      const name = `test-${randomBase62(12)}`
      const write = await accounts.createKey(name, 'write')
      const read = await accounts.createKey(name, 'read')
      return {
        id: write.account_id,
        key: write.key,
        readKey: read.key,
        keyId: write.id,
        request(method, url, body, options = {}) {
          const key = options.key === undefined ? write.key : options.key
          const headers: Record<string, string> = { ...options.headers }
          if (key !== null) headers.authorization = `Bearer ${key}`
          if (body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json'
          return inject({
            method,
            url,
            headers,
            ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
          })
        },
      }
    },
    async close() {
      await jobs.stop()
      await app.close()
      await store.close()
    },
  }
}

/**
 * An app whose database is closed after one account was made, to see how failures are answered.
 * Its own store, so the caller's main suite is unaffected; the caller closes it.
 */
export async function startAppWithClosedDatabase(kind: StoreKind): Promise<{ app: FastifyInstance, key: string, close(): Promise<void> }> {
  const store = await kind.open()
  let app: FastifyInstance
  let key: string
  try {
    await migrateToLatest(store.db)
    app = await buildApp({ config: loadConfig({}), db: store.db })
    key = (await createAccountService({ db: store.db, clock: new TestClock() }).createKey(`closed-${randomBase62(8)}`, 'write')).key
  } catch (error) {
    await store.close()
    throw error
  }
  await store.db.close()
  return {
    app,
    key,
    async close() {
      await app.close()
      await store.close()
    },
  }
}
