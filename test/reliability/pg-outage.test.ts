import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createKeyWithCli, inAnHour, killServer, stopServer } from '../helpers/processes.js'
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { SERVING_QUERY_TIMEOUT_MS } from '../../src/db/database.js'
import { parseBody } from '../helpers/response.js'

/**
 * PostgreSQL goes away under a running `wishpay serve` and comes back (contract sections 2 and 8):
 * while it is down every request that needs it is answered 503 api_error `service_unavailable` with
 * Retry-After within 2 s, /readyz is 503 and /healthz stays 200; once it is back the same process
 * serves again by itself. The database is a throw-away cluster of this test's own (initdb + pg_ctl).
 */

const DEADLINE_MS = 2_000
/** A request still unanswered after this is a hang: it is aborted and reported. */
const HANG_MS = 10_000

interface Timed {
  label: string
  status: number | 'hung' | 'network_error'
  ms: number
  startedAt: number
  body: any
  raw: string
  retryAfter: string | null
}

/** A request to the server that always resolves, with its duration; never hangs the test. */
async function timed(baseUrl: string, key: string | null, method: string, path: string, body?: unknown, hangMs = HANG_MS): Promise<Timed> {
  const headers: Record<string, string> = {}
  if (key !== null) headers.authorization = `Bearer ${key}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const startedAt = performance.now()
  const label = `${method} ${path}`
  try {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      signal: AbortSignal.timeout(hangMs),
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    const raw = await res.text()
    const parsed = parseBody(raw)
    return { label, status: res.status, ms: performance.now() - startedAt, startedAt, body: parsed, raw, retryAfter: res.headers.get('retry-after') }
  } catch (error) {
    const hung = (error as Error).name === 'TimeoutError'
    return { label, status: hung ? 'hung' : 'network_error', ms: performance.now() - startedAt, startedAt, body: undefined, raw: String(error), retryAfter: null }
  }
}

const show = (a: Timed) => `${a.label} -> ${a.status} in ${Math.round(a.ms)} ms: ${a.raw.slice(0, 300)}`

/** A 503 api_error service_unavailable with Retry-After, answered within the deadline. */
/**
 * A stopped or unreachable server is refused at once; an unresponsive (frozen) one is given up on after
 * the serving query timeout (src/db/database.ts), so such answers get that long plus a margin.
 */
const FROZEN_DEADLINE_MS = SERVING_QUERY_TIMEOUT_MS + 1500

function assertUnavailable(a: Timed, deadlineMs = DEADLINE_MS): void {
  assert.equal(a.status, 503, show(a))
  assert.equal(a.body?.error?.type, 'api_error', show(a))
  assert.equal(a.body?.error?.code, 'service_unavailable', show(a))
  assert.match(a.body?.error?.request_id ?? '', /^req_/, show(a))
  assert.match(a.retryAfter ?? '', /^[1-9]\d*$/, `Retry-After on ${show(a)}`)
  assert.ok(a.ms < deadlineMs, `answered within ${deadlineMs} ms: ${show(a)}`)
  for (const leak of [/ECONNREFUSED/i, /postgres/i, /pg_/i, /\bat .+:\d+/, /terminat/i]) assert.doesNotMatch(a.raw, leak, show(a))
}

describe('PostgreSQL outage under a running server', { timeout: 120_000 }, () => {
  let cluster: PgCluster | undefined
  let server: ServerProcess | undefined
  let key = ''
  let paymentId = ''
  let stderr = ''

  /** What the server said, for failure messages: its exit and the end of its output. */
  const serverState = () => `server exit: ${server?.child.exitCode ?? server?.child.signalCode ?? 'still running'}\n`
    + `stdout (end):\n${server?.output().slice(-4000) ?? ''}\nstderr (end):\n${stderr.slice(-4000)}`

  const url = () => server!.url

  async function pay(): Promise<Timed> {
    const mandate = await timed(url(), key, 'POST', '/mandates', { protocol: 'ap2', max_amount: 5000, usage: 'multi_use', budget_amount: 100_000, expires_at: inAnHour() })
    if (mandate.status !== 201) return mandate
    return timed(url(), key, 'POST', '/payments', { mandate_id: mandate.body.data.id, amount: 100, idempotency_key: randomUUID() })
  }

  /**
   * Light load: `clients` clients, each sending one request after another (reads, writes, a payment
   * read), `pauseMs` apart, until stop().
   */
  function startLoad(clients: number, pauseMs: number): { answers: Timed[], stop(): Promise<void> } {
    const answers: Timed[] = []
    let loading = true
    const client = async (i: number) => {
      for (let n = 0; loading; n++) {
        const kind = (i + n) % 3
        answers.push(kind === 0
          ? await timed(url(), key, 'GET', '/wishes')
          : kind === 1
            ? await timed(url(), key, 'POST', '/wishes', { query: `outage ${i}-${n}` })
            : await timed(url(), key, 'GET', `/payments/${paymentId}`))
        await new Promise((resolve) => setTimeout(resolve, pauseMs))
      }
    }
    const running = Promise.all(Array.from({ length: clients }, (_, i) => client(i)))
    return {
      answers,
      async stop() {
        loading = false
        await running
      },
    }
  }

  before(async () => {
    // Fails with a clear message when initdb/pg_ctl are missing: this test is never skipped silently.
    cluster = await startPgCluster()
    const env = { DATABASE_URL: cluster.url }
    // The load below is one key's: no rate limit in the way.
    server = await startServer({ ...env, RATE_LIMIT_PER_SECOND: '1000000' })
    server.child.stderr!.on('data', (chunk) => { stderr += chunk })
    key = (await createKeyWithCli(env, 'pg-outage')).key
  })

  after(async () => {
    try {
      if (server) {
        const { killed } = await stopServer(server, 'SIGTERM', 10_000)
        if (killed) process.stderr.write('pg-outage: the server had to be SIGKILLed\n')
      }
    } finally {
      if (server) await killServer(server)
      await cluster?.destroy()
    }
  })

  test('with PostgreSQL up: /readyz is 200 and a payment succeeds', async () => {
    const ready = await timed(url(), null, 'GET', '/readyz')
    assert.equal(ready.status, 200, show(ready))
    const payment = await pay()
    assert.equal(payment.status, 201, show(payment))
    assert.equal(payment.body.data.status, 'succeeded', show(payment))
    paymentId = payment.body.data.id
  })

  test(`PostgreSQL stopped under load: requests are 503 service_unavailable with Retry-After within ${DEADLINE_MS / 1000} s, /readyz 503, /healthz 200`, async (t) => {
    const load = startLoad(3, 20)
    const answers = load.answers
    try {
      await new Promise((resolve) => setTimeout(resolve, 500))
      const stopStarted = performance.now()
      await cluster!.stop()
      const stopped = performance.now()
      t.diagnostic(`pg_ctl stop -m fast took ${Math.round(stopped - stopStarted)} ms`)
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      await load.stop()

      const before = answers.filter((a) => a.startedAt + a.ms < stopStarted)
      const during = answers.filter((a) => a.startedAt + a.ms >= stopStarted && a.startedAt < stopped)
      const down = answers.filter((a) => a.startedAt >= stopped)
      t.diagnostic(`answers: ${before.length} before the stop, ${during.length} across it, ${down.length} while down`)

      // Nothing hangs and nothing is a 500, whenever it was sent.
      const bad = answers.filter((a) => typeof a.status !== 'number' || a.status === 500 || a.ms >= DEADLINE_MS)
      assert.deepEqual(bad.map(show), [], `no request hung, failed at the network, took 2 s or more, or was a 500\n${serverState()}`)
      assert.ok(before.length > 0 && before.every((a) => a.status === 200 || a.status === 201), `all good before the stop:\n${before.filter((a) => a.status !== 200 && a.status !== 201).map(show).join('\n')}`)
      for (const a of during) {
        if (a.status !== 200 && a.status !== 201) assertUnavailable(a)
      }
      assert.ok(down.length >= 10, `the load went on while PostgreSQL was down (${down.length} answers)`)
      for (const a of down) assertUnavailable(a)
      const slowest = Math.max(...down.map((a) => a.ms))
      t.diagnostic(`slowest 503 while down: ${Math.round(slowest)} ms`)
    } finally {
      await load.stop()
    }

    // Each kind of route, on its own: writes, reads, payments.
    for (const a of [
      await pay(),
      await timed(url(), key, 'GET', `/payments/${paymentId}`),
      await timed(url(), key, 'GET', '/mandates'),
      await timed(url(), key, 'GET', '/events'),
    ]) assertUnavailable(a)

    const ready = await timed(url(), null, 'GET', '/readyz')
    assertUnavailable(ready)
    const live = await timed(url(), null, 'GET', '/healthz')
    assert.equal(live.status, 200, show(live))
    assert.deepEqual(live.body, { status: 'ok' })
    assert.ok(live.ms < DEADLINE_MS, show(live))

    assert.equal(server!.child.exitCode, null, `the server process is still running\n${serverState()}`)
    assert.equal(server!.child.signalCode, null, `the server process is still running\n${serverState()}`)
  })

  test('PostgreSQL back: the same server process serves again by itself within a few seconds', async (t) => {
    const pid = server!.child.pid
    await cluster!.start()
    const back = performance.now()

    let first: Timed | undefined
    const attempts: Timed[] = []
    while (performance.now() - back < 15_000) {
      const a = await timed(url(), key, 'GET', `/payments/${paymentId}`)
      attempts.push(a)
      if (a.status === 200) {
        first = a
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const recoveredAfter = performance.now() - back
    t.diagnostic(`first success ${Math.round(recoveredAfter)} ms after PostgreSQL accepted connections again (${attempts.length} attempts)`)
    assert.ok(first, `the service did not recover within 15 s; last answers:\n${attempts.slice(-3).map(show).join('\n')}`)
    assert.ok(recoveredAfter < 5_000, `recovered within 5 s (took ${Math.round(recoveredAfter)} ms)`)
    assert.equal(first.body.data.id, paymentId)
    assert.equal(first.body.data.status, 'succeeded', 'the payment made before the outage is intact')
    const notUnavailable = attempts.filter((a) => a.status !== 200 && a.status !== 503)
    assert.deepEqual(notUnavailable.map(show), [], 'until recovered, only 503s')

    const ready = await timed(url(), null, 'GET', '/readyz')
    assert.equal(ready.status, 200, show(ready))
    // Every request after recovery succeeds: no stale pooled connection is handed out.
    for (let i = 0; i < 15; i++) {
      const a = await timed(url(), key, 'GET', '/wishes')
      assert.equal(a.status, 200, show(a))
    }
    const payment = await pay()
    assert.equal(payment.status, 201, show(payment))
    assert.equal(payment.body.data.status, 'succeeded', show(payment))

    assert.equal(server!.child.pid, pid)
    assert.equal(server!.child.exitCode, null, 'not restarted: the same process serves')
  })

  test('repeated outages under load: the process survives every one and serves after each', async (t) => {
    const cycles = 5
    const load = startLoad(4, 0)
    try {
      for (let cycle = 1; cycle <= cycles; cycle++) {
        await new Promise((resolve) => setTimeout(resolve, 300))
        await cluster!.stop()
        await new Promise((resolve) => setTimeout(resolve, 500))
        assert.equal(server!.child.exitCode ?? server!.child.signalCode, null, `the server died in outage ${cycle}\n${serverState()}`)
        await cluster!.start()
        const back = performance.now()
        let ok = false
        while (!ok && performance.now() - back < 5_000) {
          ok = (await timed(url(), key, 'GET', '/wishes')).status === 200
          if (!ok) await new Promise((resolve) => setTimeout(resolve, 50))
        }
        assert.ok(ok, `served again within 5 s after outage ${cycle}\n${serverState()}`)
      }
    } finally {
      await load.stop()
    }
    const answers = load.answers
    const byStatus = new Map<string, number>()
    for (const a of answers) byStatus.set(String(a.status), (byStatus.get(String(a.status)) ?? 0) + 1)
    t.diagnostic(`${cycles} outages, answers by status: ${JSON.stringify(Object.fromEntries(byStatus))}`)
    const bad = answers.filter((a) => !(a.status === 200 || a.status === 201 || a.status === 503) || a.ms >= DEADLINE_MS)
    assert.deepEqual(bad.slice(0, 10).map(show), [], `every answer is a success or a 503 within ${DEADLINE_MS} ms (${bad.length} were not)\n${serverState()}`)
    for (const a of answers.filter((x) => x.status === 503)) assertUnavailable(a)
    assert.ok((byStatus.get('503') ?? 0) > 0, 'some requests met an outage')
  })

  // Not a clean stop: the server still accepts TCP connections but answers nothing (a network
  // partition, a hung host). The pool's open connections are the ones that matter here.
  test(`PostgreSQL unresponsive (frozen): requests are 503 service_unavailable within ${FROZEN_DEADLINE_MS / 1000} s, then recover`, async (t) => {
    // Warm the pool: several connections open and idle.
    await Promise.all(Array.from({ length: 6 }, () => timed(url(), key, 'GET', '/wishes')))
    const answers: Timed[] = []
    cluster!.freeze()
    try {
      // Waited on longer than usual, to see what the server answers in the end.
      answers.push(...await Promise.all([
        timed(url(), key, 'GET', '/wishes', undefined, 15_000),
        timed(url(), key, 'GET', `/payments/${paymentId}`, undefined, 15_000),
        timed(url(), key, 'POST', '/wishes', { query: 'frozen' }, 15_000),
        timed(url(), null, 'GET', '/readyz', undefined, 15_000),
      ]))
      const live = await timed(url(), null, 'GET', '/healthz')
      assert.equal(live.status, 200, show(live))
    } finally {
      cluster!.thaw()
    }
    t.diagnostic(answers.map(show).join('\n'))
    assert.deepEqual(answers.filter((a) => a.status === 'hung').map(show), [], 'nothing hangs')
    for (const a of answers) assertUnavailable(a, FROZEN_DEADLINE_MS)

    const back = performance.now()
    let ok: Timed | undefined
    while (!ok && performance.now() - back < 15_000) {
      const a = await timed(url(), key, 'GET', '/wishes')
      if (a.status === 200) ok = a
      else await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.ok(ok, 'the service recovered after PostgreSQL answered again')
  })
})
