import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { Database } from '../../src/db/database.js'
import { createKeyWithCli, killServer, stopServer } from '../helpers/processes.js'
import { fromFetch, type Response } from '../helpers/response.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * ACP over two `wishpay serve` processes on one PostgreSQL schema: one vault token (a single-use
 * mandate of protocol acp) redeemed concurrently on both processes, each request with its own
 * Idempotency-Key, pays exactly once.
 */

const pgUrl = process.env.TEST_DATABASE_URL
const MERCHANT = 'acme_store'

/** An authenticated JSON request to a server process, with extra headers (Idempotency-Key, API-Version). */
async function send(baseUrl: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const all: Record<string, string> = { authorization: `Bearer ${key}`, ...headers }
  if (body !== undefined) all['content-type'] = 'application/json'
  const res = await fetch(`${baseUrl}${path}`, { method, headers: all, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
  return fromFetch(res, await res.text())
}

/** A delegate_payment request for a test card, 2000 USD cents at most, for one hour. */
function delegation(checkoutSessionId: string): Record<string, unknown> {
  return {
    payment_method: {
      type: 'card', card_number_type: 'fpan', number: '4242424242424242', exp_month: '11', exp_year: String(new Date().getUTCFullYear() + 2), cvc: '223',
      display_card_funding_type: 'credit', display_brand: 'visa', display_last4: '4242', metadata: {},
    },
    allowance: { reason: 'one_time', max_amount: 2000, currency: 'usd', checkout_session_id: checkoutSessionId, merchant_id: MERCHANT, expires_at: new Date(Date.now() + 3600_000).toISOString() },
    risk_signals: [],
    metadata: {},
  }
}

describe('ACP vault tokens over two server processes on one PostgreSQL', { skip: !pgUrl && 'needs PostgreSQL (TEST_DATABASE_URL)' }, () => {
  let store: TestStore | undefined
  const servers: ServerProcess[] = []
  let db: Database | undefined
  let key = ''

  const server = (i: number) => servers[i % servers.length]!

  function tally(answers: Response[]): Record<string, number> {
    const counts: Record<string, number> = {}
    for (const a of answers) {
      const k = a.status === 201 ? '201' : `${a.status} ${a.body?.error?.type ?? '?'} ${a.body?.error?.code ?? a.raw}`
      counts[k] = (counts[k] ?? 0) + 1
    }
    return counts
  }

  before(async () => {
    store = await openStore('postgres')
    // Without Redis each process limits a key on its own; the bursts here must not meet that limit.
    const env = { ...store.env, RATE_LIMIT_PER_SECOND: '1000000' }
    const started = await Promise.allSettled([1, 2].map(() => startServer(env)))
    for (const s of started) if (s.status === 'fulfilled') servers.push(s.value)
    const failed = started.find((s) => s.status === 'rejected')
    if (failed) throw (failed as PromiseRejectedResult).reason
    key = (await createKeyWithCli(env, 'acp-multiprocess-test')).key
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

  test('one vault token redeemed 30 times at once over 2 processes, each with its own idempotency key: one payment', async (t) => {
    const session = `csn_${randomUUID()}`
    const made = await send(server(0).url, key, 'POST', '/agentic_commerce/delegate_payment', delegation(session), { 'api-version': '2026-04-17', 'idempotency-key': randomUUID() })
    assert.equal(made.status, 201, made.raw)
    const token = made.body.id as string
    assert.match(token, /^vt_/)
    // The token, read through the other process.
    const read = await send(server(1).url, key, 'GET', `/vault_tokens/${token}`)
    assert.equal(read.status, 200, read.raw)
    assert.equal(read.body.data.status, 'active')
    const mandateId = read.body.data.mandate_id as string

    const redemption = { vault_token: token, merchant_id: MERCHANT, checkout_session_id: session, amount: 1500, currency: 'usd' }
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => send(server(i).url, key, 'POST', '/payments', redemption, { 'idempotency-key': randomUUID() })))

    t.diagnostic(`answers: ${JSON.stringify(tally(answers))}`)
    assert.deepEqual(tally(answers), { 201: 1, '422 payment_error mandate_consumed': 29 })
    const payment = answers.find((a) => a.status === 201)!.body.data
    assert.equal(payment.status, 'succeeded')
    assert.equal(payment.amount, 1500)
    assert.equal(payment.protocol_type, 'acp')
    assert.equal(payment.mandate_id, mandateId)

    const payments = await db!.kysely.selectFrom('payments').select(['id', 'amount']).where('mandate_id', '=', mandateId).execute()
    assert.deepEqual(payments.map((p) => ({ id: p.id, amount: Number(p.amount) })), [{ id: payment.id, amount: 1500 }], 'exactly one payment row')
    const row = await db!.kysely.selectFrom('mandates').select(['amount_used', 'uses_count']).where('id', '=', mandateId).executeTakeFirstOrThrow()
    assert.equal(Number(row.amount_used), 1500)
    assert.equal(Number(row.uses_count), 1)
    for (const s of [server(0), server(1)]) {
      const after = await send(s.url, key, 'GET', `/vault_tokens/${token}`)
      assert.equal(after.body.data.status, 'consumed', after.raw)
    }
  })
})
