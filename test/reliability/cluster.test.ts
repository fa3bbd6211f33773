import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { runCli } from '../helpers/cli.js'
import { call, createKeyWithCli, inAnHour, killServer, stopServer, waitFor } from '../helpers/processes.js'
import type { Response } from '../helpers/response.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type PostgresTestStore } from '../helpers/stores.js'

/**
 * `wishpay serve` with WORKERS=2 (src/cluster.ts): two worker processes behind one port on one
 * PostgreSQL schema keep a mandate's budget exact, both serve requests, a worker that dies is replaced,
 * and SIGTERM to the primary drains them all and exits 0 with no worker left behind.
 */

const pgUrl = process.env.TEST_DATABASE_URL

/** Whether a process with this pid still exists (signal 0 only checks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const pidsOf = (server: ServerProcess, msg: string): number[] =>
  server.logs().filter((l) => l.msg === msg && typeof l.pid === 'number').map((l) => l.pid as number)

describe('WORKERS=2 on PostgreSQL', { skip: !pgUrl && 'the cluster serves PostgreSQL only (TEST_DATABASE_URL not set)' }, () => {
  let store: PostgresTestStore | undefined
  let server: ServerProcess | undefined
  let key = ''

  before(async () => {
    store = await openStore('postgres')
    server = await startServer({ ...store.env, WORKERS: '2', RATE_LIMIT_PER_SECOND: '1000000' })
    key = (await createKeyWithCli(store.env, 'cluster-test')).key
  })

  after(async () => {
    try {
      if (server) await killServer(server)
    } finally {
      await store?.close()
    }
  })

  test('the listening line comes once, from the primary, with the shared address and both workers', () => {
    const lines = server!.logs().filter((l) => l.msg === 'wishpay listening')
    assert.equal(lines.length, 1, 'one "wishpay listening" line')
    const line = lines[0]!
    assert.equal(line.pid, undefined, 'logged by the primary')
    assert.equal(line.workers, 2)
    assert.match(String(line.address), /^http:\/\/127\.0\.0\.1:\d+$/)
    assert.notEqual(String(line.address), 'http://127.0.0.1:0')
    const workers = line.worker_pids as number[]
    assert.equal(new Set(workers).size, 2)
    assert.ok(!workers.includes(server!.child.pid!), 'the workers are not the primary')
    // PORT=0: every worker got the same port from the primary.
    const addresses = server!.logs().filter((l) => l.msg === 'worker listening').map((l) => l.address)
    assert.deepEqual(addresses, [line.address, line.address])
  })

  test('100 concurrent payments of 10 against a budget of 600: exactly 60 succeed, served by both workers', async () => {
    const mandate = await call(server!.url, key, 'POST', '/mandates', {
      protocol: 'ap2', max_amount: 10, budget_amount: 600, usage: 'multi_use', expires_at: inAnHour(),
    })
    assert.equal(mandate.status, 201, mandate.raw)
    const mandateId = mandate.body.data.id as string
    const answers: Response[] = await Promise.all(Array.from({ length: 100 }, (_, i) => call(server!.url, key, 'POST', '/payments', {
      mandate_id: mandateId, amount: 10, payment_method: 'card', idempotency_key: `cluster-${i}`,
    })))

    const byStatus: Record<number, number> = {}
    for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1
    assert.deepEqual(byStatus, { 201: 60, 422: 40 }, `statuses ${JSON.stringify(byStatus)}; e.g. ${answers.find((a) => a.status !== 201 && a.status !== 422)?.raw}`)
    for (const a of answers.filter((x) => x.status === 422)) {
      assert.equal(a.body?.error?.type, 'payment_error', a.raw)
      assert.equal(a.body?.error?.code, 'mandate_budget_exceeded', a.raw)
    }
    const read = await call(server!.url, key, 'GET', `/mandates/${mandateId}`)
    assert.equal(read.body.data.amount_used, 600)
    assert.equal(read.body.data.uses_count, 60)
    const rows = await store!.db.kysely.selectFrom('payments').select(['amount']).where('mandate_id', '=', mandateId).execute()
    assert.equal(rows.length, 60)
    assert.equal(rows.reduce((sum, r) => sum + r.amount, 0), 600)

    // Each worker logs its requests with its pid; the primary's round robin spread the connections.
    const servedBy = await waitFor(async () => {
      const pids = new Set(server!.logs().filter((l) => l.msg === 'request' && l.route === '/payments' && l.method === 'POST').map((l) => l.pid))
      return pids.size === 2 ? pids : undefined
    }, 10_000, 'POST /payments served by two worker pids')
    assert.deepEqual([...servedBy].sort(), pidsOf(server!, 'worker listening').sort())
  })

  let victim: number | undefined

  test('a worker that dies is logged and replaced on the same port', async () => {
    const first = server!.logs().find((l) => l.msg === 'wishpay listening')!.worker_pids as number[]
    victim = first[0]!
    process.kill(victim, 'SIGKILL')
    const exited = await waitFor(async () => server!.logs().find((l) => l.msg === 'worker exited; starting a replacement'), 10_000, 'the replacement log line')
    assert.equal(exited.worker_pid, victim)
    assert.equal(exited.signal, 'SIGKILL')
    const replacement = await waitFor(async () => server!.logs().find((l) => l.msg === 'worker listening' && !first.includes(l.pid as number)),
      120_000, 'a replacement worker listening')
    assert.equal(replacement.address, server!.url)
    assert.ok(!alive(victim))
    const answers = await Promise.all(Array.from({ length: 10 }, () => call(server!.url, key, 'GET', '/wishes')))
    assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200))
  })

  test('SIGTERM to the primary drains every worker, exits 0 and leaves no worker alive', async () => {
    const workers = pidsOf(server!, 'worker listening')
    assert.deepEqual(await stopServer(server!, 'SIGTERM', 30_000), { code: 0, killed: false })
    assert.deepEqual(workers.filter(alive), [], 'no worker is left')
    // Every worker running at the signal drained through its own shutdown (src/server.ts).
    const drained = pidsOf(server!, 'shutting down')
    assert.deepEqual(workers.filter((pid) => pid !== victim).sort(), drained.sort())
  })
})

test('WORKERS=2 on the embedded SQLite store is refused at start', async () => {
  const store = await openStore('sqlite')
  try {
    const result = await runCli(['serve'], { ...store.env, WORKERS: '2', PORT: '0' })
    assert.equal(result.code, 1, `${result.stdout}\n${result.stderr}`)
    assert.match(result.stderr, /^Invalid configuration: WORKERS=2 needs PostgreSQL \(DATABASE_URL\): the embedded SQLite store serves from one process/)
    assert.doesNotMatch(result.stdout, /wishpay listening/)
  } finally {
    await store.close()
  }
})
