import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { runWorkers } from '../helpers/load.js'
import { call, createKeyWithCli, inAnHour, killServer, stopServer } from '../helpers/processes.js'
import { header, type Response } from '../helpers/response.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * Payments survive a SIGKILL under load (contract sections 5 and 6): every payment the client was told
 * about (a 201 it received) is in the store once after a restart, a retry of its key replays the very
 * same bytes, a key whose answer was lost to the kill is paid exactly once whatever the retry finds,
 * and the mandate's amount_used and uses_count are what its payments add up to.
 */

const IN_FLIGHT = 12
/** The server is killed once this many payments were acknowledged; the other workers are mid-request. */
const KILL_AFTER_ACKS = 150
const RETRY_CONCURRENCY = 8

interface Attempt {
  key: string
  amount: number
  /** The 201 the client received before the kill, if it received one. */
  ack?: Response
}

function paymentBody(mandateId: string, attempt: Attempt) {
  return { mandate_id: mandateId, amount: attempt.amount, payment_method: 'card', idempotency_key: attempt.key }
}

/** Every page of GET /payments?mandate_id=..., 100 at a time. */
async function allPaymentsOf(url: string, key: string, mandateId: string): Promise<any[]> {
  const payments: any[] = []
  for (let offset = 0; ; offset += 100) {
    const page = await call(url, key, 'GET', `/payments?mandate_id=${mandateId}&limit=100&offset=${offset}`)
    assert.equal(page.status, 200, page.raw)
    payments.push(...page.body.data)
    if (page.body.data.length < 100 || payments.length >= page.body.meta.total) {
      assert.equal(payments.length, page.body.meta.total, 'the pages hold meta.total payments')
      return payments
    }
  }
}

async function crashUnderLoad(store: TestStore, note: (message: string) => void): Promise<void> {
  const env = { ...store.env, LOG_LEVEL: 'info', RATE_LIMIT_PER_SECOND: '1000000' }
  const servers: ServerProcess[] = []
  try {
    const first = await startServer(env)
    servers.push(first)
    const { key, account_id: accountId } = await createKeyWithCli(store.env, 'crash-test')
    const created = await call(first.url, key, 'POST', '/mandates', {
      protocol: 'ap2', max_amount: 50, budget_amount: 100_000_000, usage: 'multi_use', expires_at: inAnHour(),
    })
    assert.equal(created.status, 201, created.raw)
    const mandateId = created.body.data.id as string

    // ------------------------------------------------------------ load, and a SIGKILL in its middle
    const attempts: Attempt[] = []
    const unexpected: string[] = []
    let acks = 0
    let killed = false
    await runWorkers(IN_FLIGHT, async () => {
      if (killed) return false
      const i = attempts.length
      const attempt: Attempt = { key: `crash-${i}`, amount: 10 + ((i * 7) % 41) }
      attempts.push(attempt)
      try {
        const res = await call(first.url, key, 'POST', '/payments', paymentBody(mandateId, attempt))
        if (res.status === 201) {
          attempt.ack = res
          acks++
          if (acks >= KILL_AFTER_ACKS && !killed) {
            killed = true
            first.child.kill('SIGKILL')
          }
        } else {
          unexpected.push(`${attempt.key}: ${res.status} ${res.raw}`)
        }
      } catch (error) {
        // A request cut off by the kill is unacknowledged; before the kill nothing may fail.
        if (!killed) unexpected.push(`${attempt.key}: ${String(error)}`)
      }
      return !killed
    })
    await killServer(first)
    assert.equal(first.child.signalCode, 'SIGKILL')
    assert.deepEqual(unexpected, [], 'every request before the kill was answered 201')
    const acked = attempts.filter((a) => a.ack)
    const lost = attempts.filter((a) => !a.ack)
    assert.ok(acked.length >= KILL_AFTER_ACKS)
    note(`${attempts.length} payments sent, ${acked.length} acknowledged before the kill, ${lost.length} cut off`)

    // ------------------------------------------------------------ restart on the same store
    const second = await startServer(env)
    servers.push(second)
    const idOfKey = new Map<string, string>()

    // Acknowledged: still there, unchanged, and a retry replays the acknowledged bytes.
    const ackedQueue = [...acked]
    await runWorkers(RETRY_CONCURRENCY, async () => {
      const attempt = ackedQueue.shift()
      if (!attempt) return false
      const ack = attempt.ack!
      const paymentId = ack.body.data.id as string
      idOfKey.set(attempt.key, paymentId)
      const read = await call(second.url, key, 'GET', `/payments/${paymentId}`)
      assert.equal(read.status, 200, `${attempt.key}: acknowledged payment ${paymentId} is missing after the restart: ${read.raw}`)
      assert.deepEqual(read.body.data, ack.body.data, `${attempt.key}: the stored payment is the acknowledged one`)
      const retry = await call(second.url, key, 'POST', '/payments', paymentBody(mandateId, attempt))
      assert.equal(retry.status, 201, `${attempt.key}: retry of an acknowledged payment: ${retry.raw}`)
      assert.equal(header(retry, 'idempotent-replayed'), 'true', `${attempt.key}: the retry is a replay`)
      assert.equal(retry.raw, ack.raw, `${attempt.key}: the replay is byte-identical to the acknowledged answer`)
      return true
    })

    // Cut off: the retry either replays what committed just before the kill or pays now; a second retry
    // replays whichever it was.
    let committedBeforeKill = 0
    const lostQueue = [...lost]
    await runWorkers(RETRY_CONCURRENCY, async () => {
      const attempt = lostQueue.shift()
      if (!attempt) return false
      const retry = await call(second.url, key, 'POST', '/payments', paymentBody(mandateId, attempt))
      assert.equal(retry.status, 201, `${attempt.key}: retry of a cut-off payment: ${retry.raw}`)
      assert.equal(retry.body.data.status, 'succeeded', retry.raw)
      assert.equal(retry.body.data.amount, attempt.amount)
      if (header(retry, 'idempotent-replayed') === 'true') committedBeforeKill++
      const again = await call(second.url, key, 'POST', '/payments', paymentBody(mandateId, attempt))
      assert.equal(again.status, 201, again.raw)
      assert.equal(header(again, 'idempotent-replayed'), 'true', `${attempt.key}: a second retry replays`)
      assert.equal(again.raw, retry.raw, `${attempt.key}: one payment per key`)
      idOfKey.set(attempt.key, retry.body.data.id as string)
      return true
    })
    note(`${committedBeforeKill} of the ${lost.length} cut-off payments had committed before the kill`)

    // Exactly one payment per key, and nothing else on the mandate.
    const distinctIds = new Set(idOfKey.values())
    assert.equal(idOfKey.size, attempts.length)
    assert.equal(distinctIds.size, attempts.length, 'no two keys share a payment')
    const listed = await allPaymentsOf(second.url, key, mandateId)
    assert.equal(listed.length, attempts.length, 'the mandate has exactly one payment per key')
    assert.deepEqual(new Set(listed.map((p) => p.id as string)), distinctIds, 'the mandate has no payment without a key')
    const succeeded = listed.filter((p) => p.status === 'succeeded')
    assert.equal(succeeded.length, listed.length, 'card payments succeed')

    const mandate = await call(second.url, key, 'GET', `/mandates/${mandateId}`)
    assert.equal(mandate.status, 200, mandate.raw)
    const sum = succeeded.reduce((total, p) => total + (p.amount as number), 0)
    assert.equal(sum, attempts.reduce((total, a) => total + a.amount, 0), 'each key was paid its own amount')
    assert.equal(mandate.body.data.amount_used, sum, 'amount_used is the sum of the succeeded payments')
    assert.equal(mandate.body.data.uses_count, succeeded.length, 'uses_count is the number of succeeded payments')
    assert.equal(mandate.body.data.status, 'active')

    assert.deepEqual(await stopServer(second), { code: 0, killed: false }, 'SIGTERM stops the restarted server with 0')

    // What the store holds: one payment and one idempotency record per key.
    const db = store.db
    const rows = await db.kysely.selectFrom('payments').select(['id', 'amount', 'status'])
      .where('mandate_id', '=', mandateId).execute()
    assert.equal(rows.length, attempts.length)
    assert.deepEqual(new Set(rows.map((r) => r.id)), distinctIds)
    const records = await db.kysely.selectFrom('idempotency_keys').select(['idempotency_key', 'response_status'])
      .where('account_id', '=', accountId).where('idempotency_key', 'like', 'crash-%').execute()
    assert.equal(records.length, attempts.length, 'one idempotency record per key')
    assert.deepEqual(new Set(records.map((r) => r.idempotency_key)), new Set(attempts.map((a) => a.key)))
    assert.ok(records.every((r) => r.response_status === 201))
    const stored = await db.kysely.selectFrom('mandates').select(['amount_used', 'uses_count']).where('id', '=', mandateId).executeTakeFirstOrThrow()
    assert.deepEqual(stored, { amount_used: sum, uses_count: succeeded.length })
  } finally {
    for (const server of servers) await killServer(server)
    await store.close()
  }
}

describe('payments survive a SIGKILL under load', () => {
  test('on SQLite', async (t) => {
    await crashUnderLoad(await openStore('sqlite'), (m) => t.diagnostic(m))
  })

  const pgUrl = process.env.TEST_DATABASE_URL
  test('on PostgreSQL', { skip: !pgUrl && 'TEST_DATABASE_URL not set' }, async (t) => {
    await crashUnderLoad(await openStore('postgres'), (m) => t.diagnostic(m))
  })
})
