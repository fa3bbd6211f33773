import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { Database } from '../../src/db/database.js'
import { sha256Base64Url } from '../../src/modules/ap2/open-mandate.js'
import { closedMandate, issueClosedMandate, issueMandate, makeKey, openMandate, type TestKey } from '../helpers/ap2-issuer.js'
import { createKeyWithCli, killServer, stopServer } from '../helpers/processes.js'
import { fromFetch, type Response } from '../helpers/response.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * AP2 over two `wishpay serve` processes on one PostgreSQL schema: a closed Payment Mandate replayed
 * concurrently on both processes pays exactly once (AP2 #346), and an open mandate's budget holds
 * across processes when many distinct closed mandates race for it.
 *
 * The agent and the servers share real time (no TestClock across processes): closed mandates carry
 * iat = now.
 */

const pgUrl = process.env.TEST_DATABASE_URL

/** An authenticated JSON request to a server process, with extra headers (Idempotency-Key). */
async function send(baseUrl: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const all: Record<string, string> = { authorization: `Bearer ${key}`, ...headers }
  if (body !== undefined) all['content-type'] = 'application/json'
  const res = await fetch(`${baseUrl}${path}`, { method, headers: all, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
  return fromFetch(res, await res.text())
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

interface Setup {
  agentKey: TestKey
  agentApiKey: string
  openToken: string
  mandateId: string
}

/** Open-mandate constraints for payments on demand: amounts 100..20000 USD, a budget of `budget`. */
function onDemand(budget: number): Record<string, unknown> {
  return {
    constraints: [
      { type: 'payment.amount_range', currency: 'USD', max: 20000, min: 100 },
      { type: 'payment.budget', currency: 'USD', max: budget },
      { type: 'payment.agent_recurrence', frequency: 'ON_DEMAND' },
      { type: 'payment.allowed_payees', allowed: [{ id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' }] },
      { type: 'payment.allowed_payment_instruments', allowed: [{ id: 'pi_1', type: 'card', description: 'Card 4242' }] },
    ],
    exp: nowSeconds() + 3600,
  }
}

describe('AP2 closed mandates over two server processes on one PostgreSQL', { skip: !pgUrl && 'needs PostgreSQL (TEST_DATABASE_URL)' }, () => {
  let store: TestStore | undefined
  const servers: ServerProcess[] = []
  let db: Database | undefined
  let key = ''

  const server = (i: number) => servers[i % servers.length]!

  /** Through process A: a trusted issuer, an agent with its public key and ak_ key, a mandate from an open mandate. */
  async function ap2Setup(budget: number): Promise<Setup> {
    const a = server(0).url
    const issuer = await makeKey(`issuer-${randomUUID()}`)
    const trusted = await send(a, key, 'POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: issuer.publicJwk })
    assert.equal(trusted.status, 201, trusted.raw)
    const agentKey = await makeKey('agent')
    const { kty, crv, x, y } = agentKey.publicJwk
    const agent = await send(a, key, 'POST', '/agents', { name: 'shopper', public_jwk: { kty, crv, x, y } })
    assert.equal(agent.status, 201, agent.raw)
    const agentApiKey = await send(a, key, 'POST', `/agents/${agent.body.data.id}/keys`, {})
    assert.equal(agentApiKey.status, 201, agentApiKey.raw)
    const openToken = await issueMandate(issuer, openMandate(agentKey.publicJwk, nowSeconds(), onDemand(budget)))
    const made = await send(a, key, 'POST', '/mandates', { protocol: 'ap2', agent_id: agent.body.data.id, ap2: { open_payment_mandate: openToken } })
    assert.equal(made.status, 201, made.raw)
    assert.equal(made.body.data.budget_amount, budget)
    return { agentKey, agentApiKey: agentApiKey.body.data.key, openToken, mandateId: made.body.data.id }
  }

  /** A closed mandate for one payment of `amount`, bound to a fresh nonce the agent asks process `via` for. */
  async function closedFor(s: Setup, amount: number, via: ServerProcess): Promise<string> {
    const issued = await send(via.url, s.agentApiKey, 'POST', '/ap2/nonces', {})
    assert.equal(issued.status, 201, issued.raw)
    return issueClosedMandate(s.agentKey, closedMandate({ payment_amount: { amount, currency: 'USD' } }), {
      aud: issued.body.data.audience,
      nonce: issued.body.data.nonce,
      sd_hash: sha256Base64Url(s.openToken),
      iat: nowSeconds(),
    })
  }

  /** POST /payments as the agent, with its own Idempotency-Key header. */
  function pay(via: ServerProcess, s: Setup, token: string, amount: number): Promise<Response> {
    return send(via.url, s.agentApiKey, 'POST', '/payments', { mandate_id: s.mandateId, amount, ap2: { payment_mandate: token } }, { 'idempotency-key': randomUUID() })
  }

  async function mandateRow(id: string) {
    return db!.kysely.selectFrom('mandates').select(['amount_used', 'uses_count']).where('id', '=', id).executeTakeFirstOrThrow()
  }

  function tally(answers: Response[]): Record<string, number> {
    const counts: Record<string, number> = {}
    for (const a of answers) {
      const k = a.status === 201 ? '201' : `${a.status} ${a.body?.error?.code ?? a.raw}`
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
    key = (await createKeyWithCli(env, 'ap2-multiprocess-test')).key
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

  test('one closed mandate replayed 30 times at once over 2 processes, each with its own idempotency key: one payment', async (t) => {
    const s = await ap2Setup(50000)
    const token = await closedFor(s, 1500, server(0))
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => pay(server(i), s, token, 1500)))

    t.diagnostic(`answers: ${JSON.stringify(tally(answers))}`)
    assert.deepEqual(tally(answers), { 201: 1, '422 mandate_replayed': 29 })
    for (const a of answers.filter((x) => x.status !== 201)) assert.equal(a.body.error.type, 'payment_error', a.raw)
    const payment = answers.find((a) => a.status === 201)!.body.data
    assert.equal(payment.status, 'succeeded')
    assert.equal(payment.amount, 1500)

    const payments = await db!.kysely.selectFrom('payments').select(['id', 'amount']).where('mandate_id', '=', s.mandateId).execute()
    assert.deepEqual(payments, [{ id: payment.id, amount: 1500 }], 'exactly one payment row')
    const row = await mandateRow(s.mandateId)
    assert.equal(Number(row.amount_used), 1500)
    assert.equal(Number(row.uses_count), 1)
    const closed = await db!.kysely.selectFrom('ap2_closed_mandates').select(['mandate_id', 'payment_id']).execute()
    assert.deepEqual(closed, [{ mandate_id: s.mandateId, payment_id: payment.id }], 'one ap2_closed_mandates row')
    const read = await send(server(1).url, key, 'GET', `/mandates/${s.mandateId}`)
    assert.equal(read.status, 200, read.raw)
    assert.equal(read.body.data.amount_used, 1500)
  })

  test('150 distinct closed mandates of 1000 at once over 2 processes against a budget of 50000: exactly 50 pay', async (t) => {
    const s = await ap2Setup(50000)
    const tokens = await Promise.all(Array.from({ length: 150 }, (_, i) => closedFor(s, 1000, server(i))))
    assert.equal(new Set(tokens).size, 150)
    const answers = await Promise.all(tokens.map((token, i) => pay(server(i), s, token, 1000)))

    t.diagnostic(`answers: ${JSON.stringify(tally(answers))}`)
    assert.deepEqual(tally(answers), { 201: 50, '422 mandate_budget_exceeded': 100 })
    for (const a of answers) {
      if (a.status === 201) assert.equal(a.body.data.status, 'succeeded', a.raw)
      else assert.equal(a.body.error.type, 'payment_error', a.raw)
    }
    const row = await mandateRow(s.mandateId)
    assert.equal(Number(row.amount_used), 50000)
    assert.equal(Number(row.uses_count), 50)
    const payments = await db!.kysely.selectFrom('payments').select(['amount', 'status']).where('mandate_id', '=', s.mandateId).execute()
    assert.equal(payments.length, 50)
    assert.equal(payments.reduce((sum, p) => sum + Number(p.amount), 0), 50000)
    assert.ok(payments.every((p) => p.status === 'succeeded'))
    const closed = await db!.kysely.selectFrom('ap2_closed_mandates').select(['payment_id']).where('mandate_id', '=', s.mandateId).execute()
    assert.equal(closed.length, 50, 'one ap2_closed_mandates row per payment')
    const read = await send(server(1).url, key, 'GET', `/mandates/${s.mandateId}`)
    assert.equal(read.body.data.amount_used, 50000)
  })
})
