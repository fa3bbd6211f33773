import assert from 'node:assert/strict'
import http from 'node:http'
import { describe, test } from 'node:test'
import { type HeldOutcome, type HeldRequest, heldRequest, probeNewConnection } from '../helpers/load.js'
import { call, createKeyWithCli, inAnHour, killServer, stopServer, waitFor } from '../helpers/processes.js'
import { header } from '../helpers/response.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * Graceful shutdown (contract section 8, src/server.ts): on SIGTERM the server stops accepting, finishes
 * the requests in flight within SHUTDOWN_TIMEOUT_MS, stops background work, closes the database and
 * exits 0; what it answered 201 is in the store.
 *
 * "In flight" is made exact with `Expect: 100-continue` (test/helpers/load.ts): a request counts once
 * the server has answered `100 Continue`, i.e. read its headers and handed it to the application. The
 * payments' bodies are held back until the server has logged that it is shutting down, so each one is
 * certainly still running while the server stops.
 */

const SHUTDOWN_TIMEOUT_MS = 10_000
const PAYMENTS = 24
const READS = 16

const OVERDUE = 'in-flight requests did not finish in time; closing their connections'

type Answer = Extract<HeldOutcome, { kind: 'answer' }>

function describeOutcome(outcome: HeldOutcome): string {
  return outcome.kind === 'answer' ? `${outcome.status} ${outcome.raw}` : `connection error: ${outcome.error.message}`
}

/** Resolves with the exit code once the process is gone, or 'timeout' after `ms`. */
async function exitWithin(server: ServerProcess, ms: number): Promise<number | null | 'timeout'> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return server.child.exitCode
  let timer: NodeJS.Timeout | undefined
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)))
  const timedOut = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), ms) })
  const result = await Promise.race([exited, timedOut])
  clearTimeout(timer)
  return result
}

function shuttingDown(server: ServerProcess): Promise<true> {
  return waitFor(async () => (server.logs().some((l) => l.msg === 'shutting down') ? true : undefined), 5_000, 'the "shutting down" log line', 10)
}

async function drainOnSigterm(store: TestStore, agent: http.Agent | undefined, note: (message: string) => void): Promise<void> {
  const env = { ...store.env, LOG_LEVEL: 'info', RATE_LIMIT_PER_SECOND: '1000000', SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) }
  const servers: ServerProcess[] = []
  const held: HeldRequest[] = []
  try {
    const first = await startServer(env)
    servers.push(first)
    const { key } = await createKeyWithCli(store.env, 'drain-test')
    const mandate = await call(first.url, key, 'POST', '/mandates', {
      protocol: 'ap2', max_amount: 100, budget_amount: 1_000_000, usage: 'multi_use', expires_at: inAnHour(),
    })
    assert.equal(mandate.status, 201, mandate.raw)
    const mandateId = mandate.body.data.id as string
    for (const query of ['a kettle', 'a lamp', 'a chair']) {
      const wish = await call(first.url, key, 'POST', '/wishes', { query })
      assert.equal(wish.status, 201, wish.raw)
    }

    // 40 requests in flight: payments whose bodies are held back, and reads interleaved with them.
    const bodies = Array.from({ length: PAYMENTS }, (_, i) => ({ mandate_id: mandateId, amount: 10 + i, payment_method: 'card', idempotency_key: `drain-${i}` }))
    const requests: { kind: 'payment' | 'read', index: number, request: HeldRequest }[] = []
    for (let i = 0, p = 0, r = 0; i < PAYMENTS + READS; i++) {
      const options = agent ? { agent } : {}
      if (r < READS && (i % 5 === 2 || p >= PAYMENTS)) {
        requests.push({ kind: 'read', index: r++, request: heldRequest(first.url, key, 'GET', '/wishes?limit=100', undefined, { ...options, sendBodyAtOnce: true }) })
      } else {
        const index = p++
        requests.push({ kind: 'payment', index, request: heldRequest(first.url, key, 'POST', '/payments', bodies[index], options) })
      }
    }
    held.push(...requests.map((r) => r.request))
    await Promise.all(held.map((h) => h.received))

    const sigtermAt = Date.now()
    first.child.kill('SIGTERM')
    await shuttingDown(first)

    // Stopped accepting: a new connection is refused or answered 503 at once, never left hanging.
    const probe = await probeNewConnection(first.url, '/healthz', 3_000)
    note(`a new connection after SIGTERM: ${JSON.stringify(probe)}`)
    assert.ok(refusedOrUnavailable(probe), `a new connection after SIGTERM is refused or answered 503, got ${JSON.stringify(probe)}`)

    for (const h of held) h.release()
    const outcomes = await Promise.all(requests.map(async (r) => ({ ...r, outcome: await r.request.outcome })))
    const failures = outcomes.filter((o) => o.outcome.kind !== 'answer' || o.outcome.status !== (o.kind === 'payment' ? 201 : 200))
    assert.deepEqual(failures.map((f) => `${f.kind} ${f.index}: ${describeOutcome(f.outcome)}`), [], 'every request in flight got its normal answer')

    note(`answers finished during shutdown said Connection: ${String((outcomes.find((o) => o.kind === 'payment')!.outcome as Answer).headers.connection)}`)
    const code = await exitWithin(first, SHUTDOWN_TIMEOUT_MS + 5_000)
    const tookMs = Date.now() - sigtermAt
    note(`exited ${code} ${tookMs} ms after SIGTERM`)
    assert.equal(code, 0, 'the server exits 0 after draining')
    // Everything in flight was answered, so nothing is left to wait for: the bound must not be needed.
    assert.ok(!first.logs().some((l) => l.msg === OVERDUE),
      `the server waited out SHUTDOWN_TIMEOUT_MS (${tookMs} ms) although every request in flight had been answered`)
    assert.ok(tookMs < SHUTDOWN_TIMEOUT_MS, `exited well within SHUTDOWN_TIMEOUT_MS (${tookMs} ms)`)

    const paid = outcomes.filter((o) => o.kind === 'payment').map((o) => ({ index: o.index, answer: o.outcome as Answer }))
    for (const { answer } of paid) assert.equal(answer.headers['idempotent-replayed'], undefined)
    for (const o of outcomes.filter((x) => x.kind === 'read')) assert.equal((o.outcome as Answer).body.data.length, 3)

    // Every 201 is in the store: read back by a restarted server, and replayed to the same key.
    const second = await startServer(env)
    servers.push(second)
    for (const { index, answer } of paid) {
      const read = await call(second.url, key, 'GET', `/payments/${answer.body.data.id}`)
      assert.equal(read.status, 200, read.raw)
      assert.deepEqual(read.body.data, answer.body.data)
      const retry = await call(second.url, key, 'POST', '/payments', bodies[index])
      assert.equal(retry.status, 201, retry.raw)
      assert.equal(header(retry, 'idempotent-replayed'), 'true')
      assert.equal(retry.raw, answer.raw)
    }
    const after = await call(second.url, key, 'GET', `/mandates/${mandateId}`)
    assert.equal(after.body.data.amount_used, bodies.reduce((sum, b) => sum + b.amount, 0))
    assert.equal(after.body.data.uses_count, PAYMENTS)
    assert.deepEqual(await stopServer(second), { code: 0, killed: false })

    const rows = await store.db.kysely.selectFrom('payments').select('id').where('mandate_id', '=', mandateId).execute()
    assert.equal(rows.length, PAYMENTS)
  } finally {
    for (const h of held) h.release()
    for (const server of servers) await killServer(server)
    await store.close()
  }
}

/**
 * A request still running when SHUTDOWN_TIMEOUT_MS runs out does not keep the process: its connection
 * is closed, nothing of it is kept, and the process exits 0 shortly after the bound. The request is a
 * payment whose body never arrives, so it is certainly still in flight when the bound passes.
 */
async function boundedShutdown(store: TestStore, note: (message: string) => void): Promise<void> {
  const bound = 500
  const env = { ...store.env, LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: String(bound) }
  const servers: ServerProcess[] = []
  let stuck: HeldRequest | undefined
  try {
    const first = await startServer(env)
    servers.push(first)
    const { key } = await createKeyWithCli(store.env, 'bound-test')
    const mandate = await call(first.url, key, 'POST', '/mandates', {
      protocol: 'ap2', max_amount: 100, budget_amount: 1_000, usage: 'multi_use', expires_at: inAnHour(),
    })
    assert.equal(mandate.status, 201, mandate.raw)
    const body = { mandate_id: mandate.body.data.id, amount: 40, payment_method: 'card', idempotency_key: 'bound-1' }

    stuck = heldRequest(first.url, key, 'POST', '/payments', body)
    await stuck.received
    const sigtermAt = Date.now()
    first.child.kill('SIGTERM')
    await shuttingDown(first)
    const probe = await probeNewConnection(first.url, '/healthz', 3_000)
    assert.ok(refusedOrUnavailable(probe), `a new connection after SIGTERM is refused or answered 503, got ${JSON.stringify(probe)}`)

    const code = await exitWithin(first, bound + 5_000)
    const tookMs = Date.now() - sigtermAt
    note(`exited ${code} ${tookMs} ms after SIGTERM with a request still in flight (bound ${bound} ms)`)
    assert.equal(code, 0, 'the server exits 0 once the bound has passed')
    assert.ok(tookMs >= bound - 50, `it waited for the request in flight until the bound (${tookMs} ms)`)
    assert.ok(tookMs < bound + 4_000, `it exited soon after the bound (${tookMs} ms)`)
    assert.ok(first.logs().some((l) => l.msg === OVERDUE), 'it said why it closed the connection')
    const outcome = await stuck.outcome
    assert.equal(outcome.kind, 'error', `the unfinished request's connection was closed, got ${describeOutcome(outcome)}`)

    // Nothing of it was kept: the key is new, and the retry pays once.
    const second = await startServer(env)
    servers.push(second)
    const retry = await call(second.url, key, 'POST', '/payments', body)
    assert.equal(retry.status, 201, retry.raw)
    assert.equal(header(retry, 'idempotent-replayed'), undefined, 'the cut-off request had not been saved')
    const after = await call(second.url, key, 'GET', `/mandates/${mandate.body.data.id}`)
    assert.equal(after.body.data.amount_used, 40)
    assert.equal(after.body.data.uses_count, 1)
    assert.deepEqual(await stopServer(second), { code: 0, killed: false })
  } finally {
    stuck?.release()
    for (const server of servers) await killServer(server)
    await store.close()
  }
}


/**
 * A new connection to a stopping server must not hang or be half-served: it is refused, or answered
 * 503. A connection still in the kernel's accept queue when the listening socket closes is reset
 * (ECONNRESET) by the kernel itself, which to a client is the same refusal: nothing was processed.
 */
function refusedOrUnavailable(probe: Awaited<ReturnType<typeof probeNewConnection>>): boolean {
  if ('status' in probe) return probe.status === 503
  return probe.error === 'ECONNREFUSED' || probe.error === 'ECONNRESET'
}

describe('SIGTERM drains the requests in flight', { concurrency: true }, () => {
  test('on SQLite, connections closed after each answer', async (t) => {
    await drainOnSigterm(await openStore('sqlite'), undefined, (m) => t.diagnostic(m))
  })

  test('on SQLite, keep-alive connections (as most HTTP clients keep them)', async (t) => {
    const agent = new http.Agent({ keepAlive: true })
    try {
      await drainOnSigterm(await openStore('sqlite'), agent, (m) => t.diagnostic(m))
    } finally {
      agent.destroy()
    }
  })

  const pgUrl = process.env.TEST_DATABASE_URL
  test('on PostgreSQL, connections closed after each answer', { skip: !pgUrl && 'TEST_DATABASE_URL not set' }, async (t) => {
    await drainOnSigterm(await openStore('postgres'), undefined, (m) => t.diagnostic(m))
  })
})

describe('SIGTERM with a request that outlives SHUTDOWN_TIMEOUT_MS', () => {
  test('on SQLite', async (t) => {
    await boundedShutdown(await openStore('sqlite'), (m) => t.diagnostic(m))
  })
})
