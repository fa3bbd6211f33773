import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { eventTypesOf } from '../helpers/fixtures.js'
import { call, createKeyWithCli, inAnHour, killServer, stopServer, waitFor } from '../helpers/processes.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * Settlement is durable: a bank_transfer payment accepted by a process that is then SIGKILLed is
 * settled by the next process on the same store, once, with each event once.
 */

const SETTLEMENT_DELAY_MS = 1500
const POLL_MS = 15_000

async function settlementSurvivesKill(store: TestStore, note: (message: string) => void): Promise<void> {
  const env = { ...store.env, SANDBOX_SETTLEMENT_DELAY_MS: String(SETTLEMENT_DELAY_MS), LOG_LEVEL: 'info' }
  const servers: ServerProcess[] = []
  try {
    const first = await startServer(env)
    servers.push(first)
    const { key } = await createKeyWithCli(store.env, 'restart-test')

    const mandate = await call(first.url, key, 'POST', '/mandates', {
      protocol: 'ap2', max_amount: 500, budget_amount: 500, usage: 'multi_use', expires_at: inAnHour(),
    })
    assert.equal(mandate.status, 201, mandate.raw)
    const created = await call(first.url, key, 'POST', '/payments', {
      mandate_id: mandate.body.data.id, amount: 500, payment_method: 'bank_transfer', idempotency_key: 'restart-1',
    })
    first.child.kill('SIGKILL')
    assert.equal(created.status, 201, created.raw)
    assert.equal(created.body.data.status, 'pending')
    const paymentId = created.body.data.id as string
    await killServer(first)
    assert.equal(first.child.signalCode, 'SIGKILL')

    const db = store.db
    const jobs = await db.kysely.selectFrom('jobs').selectAll().where('type', '=', 'payment.settle').execute()
    assert.equal(jobs.length, 1, 'the settlement job survived the kill')
    // Had the killed process been in the middle of a step, its lease must run out first.
    const leaseEnd = jobs[0]!.locked_until ? Date.parse(jobs[0]!.locked_until) : 0
    const budget = Math.max(POLL_MS, leaseEnd - Date.now() + 5_000)
    if (leaseEnd > 0) note(`the killed process held the job's lease until ${jobs[0]!.locked_until}; waiting ${budget} ms`)

    const second = await startServer(env)
    servers.push(second)
    const settled = await waitFor(async () => {
      const res = await call(second.url, key, 'GET', `/payments/${paymentId}`)
      assert.equal(res.status, 200, res.raw)
      return res.body.data.status === 'pending' || res.body.data.status === 'processing' ? undefined : res.body.data
    }, budget, `payment ${paymentId} to settle`, 200)
    assert.equal(settled.status, 'succeeded')
    assert.equal(settled.amount, 500)
    assert.equal(settled.failure_code, null)

    assert.deepEqual(await eventTypesOf(db, paymentId), ['payment.created', 'payment.processing', 'payment.succeeded'])
    const left = await db.kysely.selectFrom('jobs').select('id').where('type', '=', 'payment.settle').execute()
    assert.deepEqual(left, [], 'the settlement job is done')
    const mandateAfter = await call(second.url, key, 'GET', `/mandates/${mandate.body.data.id}`)
    assert.equal(mandateAfter.body.data.amount_used, 500)

    assert.deepEqual(await stopServer(second), { code: 0, killed: false })
  } finally {
    for (const server of servers) await killServer(server)
    await store.close()
  }
}

describe('settlement survives a SIGKILL and restart', () => {
  test('on SQLite', async (t) => {
    await settlementSurvivesKill(await openStore('sqlite'), (m) => t.diagnostic(m))
  })

  const pgUrl = process.env.TEST_DATABASE_URL
  test('on PostgreSQL', { skip: !pgUrl && 'TEST_DATABASE_URL not set' }, async (t) => {
    await settlementSurvivesKill(await openStore('postgres'), (m) => t.diagnostic(m))
  })
})
