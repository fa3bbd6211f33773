import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Database } from '../../src/db/database.js'
import { eventTypesOf } from '../helpers/fixtures.js'
import { call, createKeyWithCli, inAnHour, killServer, stopServer } from '../helpers/processes.js'
import { header, type Response } from '../helpers/response.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * Three `wishpay serve` processes on one PostgreSQL schema (contract sections 5 and 6): an idempotency
 * key is processed by one process only, and a mandate's budget holds across processes.
 */

const pgUrl = process.env.TEST_DATABASE_URL

describe('three server processes on one PostgreSQL', { skip: !pgUrl && 'needs PostgreSQL (TEST_DATABASE_URL)' }, () => {
  let store: TestStore | undefined
  const servers: ServerProcess[] = []
  let db: Database | undefined
  let key = ''

  const server = (i: number) => servers[i % servers.length]!

  async function mandate(body: Record<string, unknown>): Promise<string> {
    const res = await call(server(0).url, key, 'POST', '/mandates', { protocol: 'ap2', expires_at: inAnHour(), ...body })
    assert.equal(res.status, 201, res.raw)
    return res.body.data.id as string
  }

  before(async () => {
    store = await openStore('postgres')
    const env = store.env
    const started = await Promise.allSettled([1, 2, 3].map(() => startServer(env)))
    for (const s of started) if (s.status === 'fulfilled') servers.push(s.value)
    const failed = started.find((s) => s.status === 'rejected')
    if (failed) throw (failed as PromiseRejectedResult).reason
    key = (await createKeyWithCli(env, 'multiprocess-test')).key
    db = store.db
  })

  after(async () => {
    let codes: { code: number | null, killed: boolean }[]
    try {
      codes = await Promise.all(servers.map((s) => stopServer(s, 'SIGTERM')))
    } finally {
      for (const s of servers) await killServer(s)
      await store?.close()
    }
    assert.deepEqual(codes, servers.map(() => ({ code: 0, killed: false })), 'every server exits 0 on SIGTERM')
  })

  test('30 concurrent requests with one idempotency key over 3 processes: one payment, one answer', async (t) => {
    const mandateId = await mandate({ max_amount: 5_000, budget_amount: 100_000, usage: 'multi_use' })
    const body = { mandate_id: mandateId, amount: 1234, payment_method: 'card', idempotency_key: 'multi-process-once' }
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => call(server(i).url, key, 'POST', '/payments', body)))

    const unexpected = answers.filter((a) => a.status !== 201 && a.status !== 409)
    assert.deepEqual(unexpected.map((a) => `${a.status} ${a.raw}`), [], 'every answer is 201 or 409')
    const created = answers.filter((a) => a.status === 201)
    const inUse = answers.filter((a) => a.status === 409)
    t.diagnostic(`201: ${created.length}, 409 idempotency_key_in_use: ${inUse.length}`)
    assert.ok(created.length >= 1, 'at least one request got the payment')
    for (const a of inUse) {
      assert.equal(a.body?.error?.code, 'idempotency_key_in_use', a.raw)
      assert.equal(a.body?.error?.type, 'conflict_error', a.raw)
      assert.match(header(a, 'retry-after') ?? '', /^\d+$/)
    }
    const bodies = new Set(created.map((a) => a.raw))
    assert.equal(bodies.size, 1, `201 bodies differ:\n${[...bodies].join('\n')}`)
    const fresh = created.filter((a) => header(a, 'idempotent-replayed') === undefined)
    assert.equal(fresh.length, 1, 'exactly one 201 was processed; the others are replays')
    for (const a of created.filter((c) => c !== fresh[0])) assert.equal(header(a, 'idempotent-replayed'), 'true')

    const payment = created[0]!.body.data
    assert.equal(payment.status, 'succeeded')
    assert.equal(payment.amount, 1234)
    const rows = await db!.kysely.selectFrom('payments').select(['id']).where('mandate_id', '=', mandateId).execute()
    assert.deepEqual(rows.map((r) => r.id), [payment.id], 'exactly one payment row')
    assert.deepEqual(await eventTypesOf(db!, payment.id), ['payment.created', 'payment.succeeded'])
    const charged = await call(server(1).url, key, 'GET', `/mandates/${mandateId}`)
    assert.equal(charged.body.data.amount_used, 1234, 'charged once')
    assert.equal(charged.body.data.uses_count, 1)

    // A later retry on any process replays the same bytes.
    const retry = await call(server(2).url, key, 'POST', '/payments', body)
    assert.equal(retry.status, 201)
    assert.equal(retry.raw, created[0]!.raw)
    assert.equal(header(retry, 'idempotent-replayed'), 'true')
  })

  test('150 concurrent payments of 10 over 3 processes against a budget of 1000: exactly 100 succeed', async () => {
    const mandateId = await mandate({ max_amount: 10, budget_amount: 1000, usage: 'multi_use' })
    const answers: Response[] = await Promise.all(Array.from({ length: 150 }, (_, i) => call(server(i).url, key, 'POST', '/payments', {
      mandate_id: mandateId, amount: 10, payment_method: 'card', idempotency_key: `budget-${i}`,
    })))

    const byStatus = new Map<number, number>()
    for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1)
    assert.deepEqual(Object.fromEntries(byStatus), { 201: 100, 422: 50 }, `statuses: ${JSON.stringify(Object.fromEntries(byStatus))}; e.g. ${answers.find((a) => a.status !== 201 && a.status !== 422)?.raw}`)
    for (const a of answers) {
      if (a.status === 201) {
        assert.equal(a.body.data.status, 'succeeded', a.raw)
      } else {
        assert.equal(a.body?.error?.type, 'payment_error', a.raw)
        assert.equal(a.body?.error?.code, 'mandate_budget_exceeded', a.raw)
      }
    }
    const got = await call(server(2).url, key, 'GET', `/mandates/${mandateId}`)
    assert.equal(got.status, 200)
    assert.equal(got.body.data.amount_used, 1000)
    assert.equal(got.body.data.uses_count, 100)
    const rows = await db!.kysely.selectFrom('payments').select(['amount', 'status']).where('mandate_id', '=', mandateId).execute()
    assert.equal(rows.length, 100)
    assert.equal(rows.reduce((sum, r) => sum + r.amount, 0), 1000)
    assert.ok(rows.every((r) => r.status === 'succeeded'))

    // And one more is still refused.
    const more = await call(server(0).url, key, 'POST', '/payments', { mandate_id: mandateId, amount: 10, idempotency_key: 'budget-extra' })
    assert.equal(more.status, 422, more.raw)
    assert.equal(more.body.error.code, 'mandate_budget_exceeded')
  })
})
