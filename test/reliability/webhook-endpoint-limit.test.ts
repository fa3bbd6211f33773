import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT as LIMIT } from '../../src/modules/webhooks/service.js'
import { call, createKeyWithCli, killServer, stopServer } from '../helpers/processes.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * The cap on webhook endpoints per account holds across server processes: two `wishpay serve` on one
 * store (a PostgreSQL schema when TEST_DATABASE_URL is set, else one SQLite DATA_DIR), 20 creates at
 * once spread over both, with one place left: exactly one is created.
 */

const pgUrl = process.env.TEST_DATABASE_URL
/** Generous: it only matters when a server does not start at all, and a loaded machine is slow to start two. */
const START_TIMEOUT_MS = 120_000

describe(`the webhook endpoint cap across two server processes (${pgUrl ? 'postgres' : 'sqlite'})`, () => {
  let store: TestStore | undefined
  let env: Record<string, string> = {}
  const servers: ServerProcess[] = []

  before(async () => {
    store = await openStore(pgUrl ? 'postgres' : 'sqlite')
    env = { ...store.env, RATE_LIMIT_PER_SECOND: '100000' }
    // The first migrates the store; then the second starts.
    servers.push(await startServer(env, START_TIMEOUT_MS))
    servers.push(await startServer(env, START_TIMEOUT_MS))
  }, { timeout: 2 * START_TIMEOUT_MS + 30_000 })

  after(async () => {
    try {
      await Promise.all(servers.map((s) => stopServer(s, 'SIGTERM')))
    } finally {
      for (const s of servers) await killServer(s)
      await store?.close()
    }
  })

  test(`20 concurrent creates over two processes with ${LIMIT - 1} endpoints already there: exactly one succeeds`, async () => {
    const { key } = await createKeyWithCli(env, `endpoint-limit-${Date.now()}`)
    for (let i = 0; i < LIMIT - 1; i++) {
      const res = await call(servers[i % 2]!.url, key, 'POST', '/webhook_endpoints', { url: `https://8.8.8.8/hooks/${i}`, events: ['*'] })
      assert.equal(res.status, 201, res.raw)
    }
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      call(servers[i % 2]!.url, key, 'POST', '/webhook_endpoints', { url: `https://8.8.8.8/hooks/race-${i}`, events: ['*'] })))
    const summary = answers.map((a) => `${a.status} ${a.raw}`).join('\n')
    assert.equal(answers.filter((a) => a.status === 201).length, 1, summary)
    for (const a of answers.filter((x) => x.status !== 201)) {
      assert.equal(a.status, 400, summary)
      assert.equal(a.body?.error?.code, 'resource_limit_exceeded', a.raw)
    }
    const list = await call(servers[0]!.url, key, 'GET', '/webhook_endpoints')
    assert.equal(list.body.meta.total, LIMIT, list.raw)
  })
})
