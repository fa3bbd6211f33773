import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { openDatabase } from '../../src/db/database.js'
import { type Response, startTestApp, type TestApp } from '../helpers/app.js'
import { inAnHour } from '../helpers/processes.js'
import { type LossyProxy, startLossyProxy } from '../helpers/lossy-proxy.js'
import { openStore, type StoreKind } from '../helpers/stores.js'

/**
 * PostgreSQL commits a write, and the answer never reaches the server: the connection drops after the
 * COMMIT. The request cannot know whether it happened, so it is a 503 (never a 500, never a second run
 * of the write), and a payment operation's retry with its idempotency key replays what committed,
 * charging once. Both ways a write commits: in a transaction shared with others (db/statement-batch.ts)
 * and in one of its own (the general path). The database goes through a loopback proxy that loses that
 * one answer.
 */

const pgUrl = process.env.TEST_DATABASE_URL

describe('a lost COMMIT acknowledgement (postgres)', { skip: !pgUrl && 'PostgreSQL only (TEST_DATABASE_URL not set)' }, () => {
  let t: TestApp
  let proxy: LossyProxy

  /** A PostgreSQL store whose app connects through the proxy; the test reads it directly. */
  const throughProxy: StoreKind = {
    name: 'postgres',
    async open() {
      const store = await openStore('postgres')
      proxy = await startLossyProxy(store.postgres.url)
      const db = openDatabase({ databaseUrl: proxy.url, postgresSchema: store.postgres.schema })
      // Not `...store`: that would call its lazy `db` getter and open a pool of its own for nothing.
      return {
        name: 'postgres',
        env: store.env,
        postgres: store.postgres,
        db,
        async close() {
          try {
            await db.close()
          } finally {
            try {
              await proxy.close()
            } finally {
              await store.close()
            }
          }
        },
      }
    },
  }

  before(async () => { t = await startTestApp(throughProxy) })
  after(async () => { await t.close() })

  /** How many writes of a burst (`marker` and their number) a simple query carries. */
  const writesIn = (message: string, marker: string) => new Set(message.match(new RegExp(`${marker}[- ]\\d+`, 'g'))).size

  /**
   * Sends bursts of `send(i)` at once, until a transaction shared by two or more of them (a simple
   * query holding two or more of their markers) has lost its answer; resolves with that burst's answers.
   * Bursts usually share at the first: while one transaction is in flight the next ones wait together.
   */
  async function burstUntilLost(marker: string, send: (i: number) => Promise<Response>) {
    proxy.loseAnswer({ when: (message) => message.includes('execute ') && writesIn(message, marker) >= 2 })
    for (let burst = 0; burst < 5; burst++) {
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => send(burst * 16 + i)))
      if (proxy.lost() > 0) return answers
    }
    assert.fail('no transaction of two or more writes formed in 5 bursts of 16')
  }

  test('payments of a shared transaction: each is a 503 service_unavailable, and its retry replays the payment that committed, charged once', async () => {
    const a = await t.account()
    const mandate = await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 5000, usage: 'multi_use', budget_amount: 1_000_000, expires_at: inAnHour() })
    assert.equal(mandate.status, 201)
    const marker = `lost-ack-${randomUUID()}`
    const bodies: Array<{ mandate_id: string, amount: number, idempotency_key: string }> = []
    const answers = await burstUntilLost(marker, (i) => {
      bodies[i] = { mandate_id: mandate.body.data.id, amount: 100 + i, idempotency_key: `${marker}-${i}` }
      return a.request('POST', '/payments', bodies[i])
    })
    assert.equal(proxy.lost(), 1)
    const lost = answers.filter((r) => r.status === 503)
    assert.deepEqual(answers.filter((r) => r.status !== 201 && r.status !== 503).map((r) => JSON.stringify(r.body)), [], 'each a 201 or a 503')
    assert.ok(lost.length >= 2, `the shared transaction's payments were each told 503 (${lost.length})`)
    for (const r of lost) assert.equal(r.body.error.code, 'service_unavailable')

    // Every payment sent, retried with its key where it was a 503, is there once and charged once.
    const sent = bodies.length
    let replayed = 0
    for (const body of bodies) {
      const retry = await a.request('POST', '/payments', body)
      assert.equal(retry.status, 201, JSON.stringify(retry.body))
      if (retry.headers['idempotent-replayed'] === 'true') replayed++
    }
    assert.equal(replayed, sent, 'every retry replays: each payment committed at its first attempt')
    const listed = await a.request('GET', `/payments?mandate_id=${mandate.body.data.id}&limit=100`)
    assert.equal(listed.body.data.length, sent)
    const after = await a.request('GET', `/mandates/${mandate.body.data.id}`)
    assert.equal(after.body.data.uses_count, sent)
    assert.equal(after.body.data.amount_used, bodies.reduce((sum, b) => sum + b.amount, 0), 'charged once each')
  })

  test('a refund (a transaction of its own) whose COMMIT answer is lost: 503 service_unavailable, and its retry replays it, refunded once', async () => {
    const a = await t.account()
    const mandate = await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 5000, usage: 'multi_use', budget_amount: 100_000, expires_at: inAnHour() })
    const payment = await a.request('POST', '/payments', { mandate_id: mandate.body.data.id, amount: 1000, idempotency_key: randomUUID() })
    assert.equal(payment.status, 201)
    const body = { amount: 300, idempotency_key: `lost-ack-refund-${randomUUID()}` }
    // The COMMIT of the next transaction to begin: the refund's, since the test app runs no background
    // work (were it another's, the refund would answer 201 and the test fail).
    const simpleQuery = (message: string, word: string) => new RegExp(`^Q[^]{4}${word}\\b`, 'i').test(message)
    proxy.loseAnswer({ when: (message) => simpleQuery(message, 'begin'), cutAt: (message) => simpleQuery(message, 'commit') })
    const lost = await a.request('POST', `/payments/${payment.body.data.id}/refunds`, body)
    assert.equal(proxy.lost(), 1)
    assert.equal(lost.status, 503, JSON.stringify(lost.body))
    assert.equal(lost.body.error.code, 'service_unavailable')
    const retry = await a.request('POST', `/payments/${payment.body.data.id}/refunds`, body)
    assert.equal(retry.status, 201, JSON.stringify(retry.body))
    assert.equal(retry.headers['idempotent-replayed'], 'true', 'the refund committed at the first attempt')
    const after = await a.request('GET', `/payments/${payment.body.data.id}`)
    assert.equal(after.body.data.amount_refunded, 300, 'refunded once')
    const refunds = await a.request('GET', `/payments/${payment.body.data.id}/refunds`)
    assert.equal(refunds.body.data.length, 1)
  })

  test('wishes without a key in a shared transaction: each is a 503 service_unavailable (not a duplicate key\'s 500), and each wish committed once', async () => {
    const a = await t.account()
    const marker = `lost-ack-wish-${randomUUID()}`
    const queries: string[] = []
    const answers = await burstUntilLost(marker, (i) => {
      queries[i] = `${marker} ${i}`
      return a.request('POST', '/wishes', { query: queries[i] })
    })
    assert.equal(proxy.lost(), 1)
    const lost = answers.filter((r) => r.status === 503)
    assert.deepEqual(answers.filter((r) => r.status !== 201 && r.status !== 503).map((r) => JSON.stringify(r.body)), [], 'each a 201 or a 503')
    assert.ok(lost.length >= 2, `the shared transaction's wishes were each told 503 (${lost.length})`)
    for (const r of lost) assert.equal(r.body.error.code, 'service_unavailable')
    // The requests could not tell, but the wishes are there, each once.
    const listed = await a.request('GET', '/wishes?limit=100')
    assert.deepEqual(listed.body.data.map((w: { query: string }) => w.query).sort(), [...queries].sort())
  })
})
