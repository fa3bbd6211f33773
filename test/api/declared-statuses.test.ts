import assert from 'node:assert/strict'
import { generateKeyPairSync, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { buildApp } from '../../src/app.js'
import { newId } from '../../src/lib/ids.js'
import { insertAttempt } from '../../src/modules/webhooks/repository.js'
import { type Response, startAppWithClosedDatabase, startTestApp, type TestAccount, type TestApp, toResponse } from '../helpers/app.js'
import { createMandate } from '../helpers/fixtures.js'
import { injectEventStream, isEventStream } from '../helpers/event-stream.js'
import { type Exchange, OpenApiContract, type Operation } from '../helpers/openapi-contract.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Every answer a route gives is declared in /openapi.json, with a body that conforms to the declared
 * schema (so its error type and code are in that status's enumerations) and the headers declared
 * required. Each operation is driven through every failure this API knows how to cause: no key, a
 * bad key, a read key on a write, unknown and malformed ids, bad query strings, bad bodies of every
 * kind, idempotency keys reused or in conflict, the service's own refusals, the rate limit, a
 * draining server and an unreachable database.
 */

interface Request {
  method: string
  url: string
  /** JSON to send; a string is sent as is. */
  body?: unknown
  headers?: Record<string, string>
}

type Maker = (a: TestAccount, seed: number) => Promise<Request>

const FAR = '2099-12-31T23:59:59.000Z'

/** A new EC P-256 public JWK (with its private member d when asked), under a new kid. */
function ecJwk(kid: string = randomUUID(), withPrivate = false): Record<string, unknown> {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  return { ...(withPrivate ? privateKey : publicKey).export({ format: 'jwk' }), kid }
}
const ONE_MIB = 1024 * 1024

/** ACP's Delegate Payment API (src/modules/acp/routes.ts): its own version header, and its official example request. */
const ACP_VERSION = '2026-04-17'
const ACP_HEADERS = { 'api-version': ACP_VERSION }
const ACP_EXAMPLES = JSON.parse(fs.readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/acp-2026-04-17/examples.delegate_payment.json'), 'utf8'))
/** The official request (as test/api/acp-delegate-payment.test.ts's officialRequest), unexpired, for checkout session `seed`. */
function acpRequest(now: Date, seed: number): any {
  const body = structuredClone(ACP_EXAMPLES.delegate_payment_request)
  body.allowance.expires_at = new Date(now.getTime() + 3600_000).toISOString()
  body.allowance.checkout_session_id = `csn_declared_${seed}`
  body.payment_method.exp_year = String(now.getUTCFullYear() + 2)
  return body
}

async function data(res: Response): Promise<any> {
  assert.ok(res.status < 300, `${res.status} ${res.raw}`)
  return res.body.data
}

/** Objects made through the API for a request to act on; new ones each time. */
const make = {
  wish: (a: TestAccount, seed: number) => a.request('POST', '/wishes', { query: `wish ${seed}` }).then(data),
  mandate: (t: TestApp, a: TestAccount, body: Record<string, unknown> = {}) => createMandate(t, a, { usage: 'multi_use', budget_amount: 1_000_000, ...body }),
  payment: async (t: TestApp, a: TestAccount, seed: number, paymentMethod = 'card') => {
    const mandate = await make.mandate(t, a)
    return a.request('POST', '/payments', { mandate_id: mandate.id, amount: 100 + seed, payment_method: paymentMethod, idempotency_key: randomUUID() }).then(data)
  },
  endpoint: (a: TestAccount) => a.request('POST', '/webhook_endpoints', { url: 'https://example.org/hooks', events: ['*'] }).then(data),
  agent: (a: TestAccount) => a.request('POST', '/agents', { name: 'assistant' }).then(data),
  trustedKey: (a: TestAccount) => a.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: ecJwk() }).then(data),
  /** A payment marked as made with an AP2 closed mandate (its `ap2` set directly, as the AP2 payment path writes it). */
  ap2Payment: async (t: TestApp, a: TestAccount, seed: number, paymentMethod = 'card'): Promise<any> => {
    const payment = await make.payment(t, a, seed, paymentMethod)
    await t.store.db.kysely.updateTable('payments').set({ ap2: JSON.stringify({ reference: `closed-mandate-${seed}` }) }).where('id', '=', payment.id).execute()
    return payment
  },
  vaultToken: async (t: TestApp, a: TestAccount, seed: number): Promise<any> => {
    const res = await a.request('POST', '/agentic_commerce/delegate_payment', acpRequest(t.clock.now(), seed), { headers: { ...ACP_HEADERS, 'idempotency-key': randomUUID() } })
    assert.equal(res.status, 201, res.raw)
    return res.body
  },
  event: async (a: TestAccount): Promise<any> => {
    await make.wish(a, 0)
    return (await a.request('GET', '/events?limit=1')).body.data[0]
  },
  /** A failed delivery attempt of an event to an endpoint, as the delivery job records one. */
  deliveryAttempt: async (t: TestApp, a: TestAccount): Promise<{ id: string }> => {
    const [endpoint, event] = [await make.endpoint(a), await make.event(a)]
    const id = newId('wha')
    const row = {
      id, account_id: a.id, endpoint_id: endpoint.id, event_id: event.id, event_type: event.type, attempt: 1,
      status_code: 500, error: 'HTTP 500', succeeded: 0, duration_ms: 1, next_retry_at: null, created_at: event.created_at,
    }
    await t.store.db.kysely.transaction().execute((trx) => insertAttempt(trx, row))
    return { id }
  },
}

/** A valid request for each operation; the test fails for an operation that has none. */
function validRequests(t: TestApp): Record<string, Maker> {
  return {
    createWish: async (_a, seed) => ({ method: 'POST', url: '/wishes', body: { query: `wish ${seed}` } }),
    listWishes: async () => ({ method: 'GET', url: '/wishes' }),
    getWish: async (a, seed) => ({ method: 'GET', url: `/wishes/${(await make.wish(a, seed)).id}` }),
    updateWish: async (a, seed) => ({ method: 'PUT', url: `/wishes/${(await make.wish(a, seed)).id}`, body: { query: `changed ${seed}` } }),
    deleteWish: async (a, seed) => ({ method: 'DELETE', url: `/wishes/${(await make.wish(a, seed)).id}` }),
    createMandate: async (_a, seed) => ({ method: 'POST', url: '/mandates', body: { protocol: 'ap2', max_amount: 1000 + seed, expires_at: FAR } }),
    listMandates: async () => ({ method: 'GET', url: '/mandates' }),
    getMandate: async (a) => ({ method: 'GET', url: `/mandates/${(await make.mandate(t, a)).id}` }),
    revokeMandate: async (a) => ({ method: 'POST', url: `/mandates/${(await make.mandate(t, a)).id}/revoke` }),
    createPayment: async (a, seed) => ({ method: 'POST', url: '/payments', body: { mandate_id: (await make.mandate(t, a)).id, amount: 100 + seed } }),
    listPayments: async () => ({ method: 'GET', url: '/payments' }),
    getPayment: async (a, seed) => ({ method: 'GET', url: `/payments/${(await make.payment(t, a, seed)).id}` }),
    createRefund: async (a, seed) => ({ method: 'POST', url: `/payments/${(await make.payment(t, a, seed)).id}/refunds`, body: {} }),
    listRefunds: async (a, seed) => ({ method: 'GET', url: `/payments/${(await make.payment(t, a, seed)).id}/refunds` }),
    settlePayment: async (a, seed) => ({ method: 'POST', url: `/payments/${(await make.payment(t, a, seed, 'bank_transfer')).id}/settle` }),
    listEvents: async () => ({ method: 'GET', url: '/events' }),
    getEvent: async (a) => ({ method: 'GET', url: `/events/${(await make.event(a)).id}` }),
    streamEvents: async () => ({ method: 'GET', url: '/events/stream' }),
    resendWebhookDelivery: async (a) => ({ method: 'POST', url: `/webhook_deliveries/${(await make.deliveryAttempt(t, a)).id}/resend` }),
    createWebhookEndpoint: async (_a, seed) => ({ method: 'POST', url: '/webhook_endpoints', body: { url: `https://example.org/hooks/${seed}`, events: ['*'] } }),
    listWebhookEndpoints: async () => ({ method: 'GET', url: '/webhook_endpoints' }),
    getWebhookEndpoint: async (a) => ({ method: 'GET', url: `/webhook_endpoints/${(await make.endpoint(a)).id}` }),
    updateWebhookEndpoint: async (a) => ({ method: 'PUT', url: `/webhook_endpoints/${(await make.endpoint(a)).id}`, body: { enabled: false } }),
    deleteWebhookEndpoint: async (a) => ({ method: 'DELETE', url: `/webhook_endpoints/${(await make.endpoint(a)).id}` }),
    listWebhookDeliveries: async (a) => ({ method: 'GET', url: `/webhook_endpoints/${(await make.endpoint(a)).id}/deliveries` }),
    createAgent: async (_a, seed) => ({ method: 'POST', url: '/agents', body: { name: `agent ${seed}` } }),
    listAgents: async () => ({ method: 'GET', url: '/agents' }),
    getAgent: async (a) => ({ method: 'GET', url: `/agents/${(await make.agent(a)).id}` }),
    disableAgent: async (a) => ({ method: 'POST', url: `/agents/${(await make.agent(a)).id}/disable` }),
    createAgentKey: async (a) => ({ method: 'POST', url: `/agents/${(await make.agent(a)).id}/keys` }),
    createTrustedKey: async () => ({ method: 'POST', url: '/trusted_keys', body: { role: 'trusted_agent_provider', public_jwk: ecJwk() } }),
    listTrustedKeys: async () => ({ method: 'GET', url: '/trusted_keys' }),
    getTrustedKey: async (a) => ({ method: 'GET', url: `/trusted_keys/${(await make.trustedKey(a)).id}` }),
    revokeTrustedKey: async (a) => ({ method: 'POST', url: `/trusted_keys/${(await make.trustedKey(a)).id}/revoke` }),
    getHealth: async () => ({ method: 'GET', url: '/healthz' }),
    getReadiness: async () => ({ method: 'GET', url: '/readyz' }),
    getOpenApi: async () => ({ method: 'GET', url: '/openapi.json' }),
    getMetrics: async () => ({ method: 'GET', url: '/metrics' }),
    createAp2Nonce: async () => ({ method: 'POST', url: '/ap2/nonces', body: {} }),
    getJwks: async () => ({ method: 'GET', url: '/.well-known/jwks.json' }),
    getPaymentReceipt: async (a, seed) => ({ method: 'GET', url: `/payments/${(await make.ap2Payment(t, a, seed)).id}/receipt` }),
    getVaultToken: async (a, seed) => ({ method: 'GET', url: `/vault_tokens/${(await make.vaultToken(t, a, seed)).id}` }),
    revokeVaultToken: async (a, seed) => ({ method: 'POST', url: `/vault_tokens/${(await make.vaultToken(t, a, seed)).id}/revoke` }),
    getAcpDiscovery: async () => ({ method: 'GET', url: '/.well-known/acp.json' }),
    // ACP's route: its API-Version header is part of every valid request (the Idempotency-Key is added as for every POST).
    delegatePayment: async (_a, seed) => ({ method: 'POST', url: '/agentic_commerce/delegate_payment', body: acpRequest(t.clock.now(), seed), headers: ACP_HEADERS }),
  }
}

/** Refusals that only the service can give, per operation. */
function serviceRefusals(t: TestApp): Record<string, Array<(a: TestAccount) => Promise<Request>>> {
  return {
    updateWish: [async (a) => {
      const wish = await make.wish(a, 1)
      await a.request('PUT', `/wishes/${wish.id}`, { status: 'cancelled' })
      return { method: 'PUT', url: `/wishes/${wish.id}`, body: { query: 'too late' } }
    }],
    revokeMandate: [async (a) => {
      const mandate = await make.mandate(t, a)
      await a.request('POST', `/mandates/${mandate.id}/revoke`)
      return { method: 'POST', url: `/mandates/${mandate.id}/revoke` }
    }],
    createMandate: [
      async () => ({ method: 'POST', url: '/mandates', body: { protocol: 'ap2', max_amount: 100, expires_at: FAR, wish_id: 'wish_unknown' } }),
      async () => ({ method: 'POST', url: '/mandates', body: { protocol: 'ap2', max_amount: 100, expires_at: FAR, agent_id: 'agt_unknown' } }),
      async (a) => {
        const wish = await a.request('POST', '/wishes', { query: 'small', protocol: 'acp', budget: { max: 1 } }).then(data)
        return { method: 'POST', url: '/mandates', body: { protocol: 'ap2', max_amount: 100, expires_at: FAR, wish_id: wish.id } }
      },
      async () => ({ method: 'POST', url: '/mandates', body: { protocol: 'ap2', max_amount: 100, expires_at: '2000-01-01T00:00:00.000Z' } }),
    ],
    createPayment: [
      async () => ({ method: 'POST', url: '/payments', body: { mandate_id: 'mdt_unknown', amount: 100 } }),
      async (a) => ({ method: 'POST', url: '/payments', body: { mandate_id: (await make.mandate(t, a, { max_amount: 100 })).id, amount: 101 } }),
      async (a) => ({ method: 'POST', url: '/payments', body: { mandate_id: (await make.mandate(t, a)).id, amount: 100, payment_method: 'cheque' } }),
      async (a) => ({ method: 'POST', url: '/payments', body: { mandate_id: (await make.mandate(t, a)).id, amount: 100, currency: 'EUR' } }),
    ],
    createRefund: [
      async (a) => ({ method: 'POST', url: `/payments/${(await make.payment(t, a, 1, 'test_card_declined')).id}/refunds`, body: {} }),
      async (a) => ({ method: 'POST', url: `/payments/${(await make.payment(t, a, 1)).id}/refunds`, body: { amount: 1_000_000 } }),
    ],
    settlePayment: [async (a) => ({ method: 'POST', url: `/payments/${(await make.payment(t, a, 1)).id}/settle` })],
    disableAgent: [async (a) => {
      const agent = await make.agent(a)
      await a.request('POST', `/agents/${agent.id}/disable`)
      return { method: 'POST', url: `/agents/${agent.id}/disable` }
    }],
    createAgentKey: [async (a) => {
      const agent = await make.agent(a)
      await a.request('POST', `/agents/${agent.id}/disable`)
      return { method: 'POST', url: `/agents/${agent.id}/keys` }
    }],
    createTrustedKey: [
      async (a) => ({ method: 'POST', url: '/trusted_keys', body: { role: 'trusted_agent_provider', public_jwk: ecJwk((await make.trustedKey(a)).kid) } }),
      async () => ({ method: 'POST', url: '/trusted_keys', body: { role: 'trusted_agent_provider', public_jwk: ecJwk(randomUUID(), true) } }),
    ],
    getPaymentReceipt: [
      async (a) => ({ method: 'GET', url: `/payments/${(await make.payment(t, a, 1)).id}/receipt` }),
      async (a) => ({ method: 'GET', url: `/payments/${(await make.ap2Payment(t, a, 1, 'bank_transfer')).id}/receipt` }),
    ],
    revokeVaultToken: [async (a) => {
      const token = await make.vaultToken(t, a, 1)
      await a.request('POST', `/vault_tokens/${token.id}/revoke`)
      return { method: 'POST', url: `/vault_tokens/${token.id}/revoke` }
    }],
    delegatePayment: [
      // ACP's refusals, each its flat error (declared per status): a card, an allowance, the version header.
      async () => {
        const body = acpRequest(t.clock.now(), 1)
        body.payment_method.number = '4242424242424241'
        return { method: 'POST', url: '/agentic_commerce/delegate_payment', body, headers: ACP_HEADERS }
      },
      async () => {
        const body = acpRequest(t.clock.now(), 1)
        body.allowance.expires_at = '2020-01-01T00:00:00Z'
        return { method: 'POST', url: '/agentic_commerce/delegate_payment', body, headers: ACP_HEADERS }
      },
      async () => ({ method: 'POST', url: '/agentic_commerce/delegate_payment', body: acpRequest(t.clock.now(), 1) }),
      async () => ({ method: 'POST', url: '/agentic_commerce/delegate_payment', body: acpRequest(t.clock.now(), 1), headers: { 'api-version': '2025-01-01' } }),
    ],
    revokeTrustedKey: [async (a) => {
      const key = await make.trustedKey(a)
      await a.request('POST', `/trusted_keys/${key.id}/revoke`)
      return { method: 'POST', url: `/trusted_keys/${key.id}/revoke` }
    }],
    createWebhookEndpoint: [
      async () => ({ method: 'POST', url: '/webhook_endpoints', body: { url: 'ftp://example.org/hooks', events: ['*'] } }),
      async (a) => {
        // One more than an account may have.
        for (let made = (await a.request('GET', '/webhook_endpoints')).body.meta.total; made < 100; made++) {
          const res = await a.request('POST', '/webhook_endpoints', { url: 'https://example.org/hooks', events: ['*'] })
          if (res.status !== 201) break
        }
        return { method: 'POST', url: '/webhook_endpoints', body: { url: 'https://example.org/hooks', events: ['*'] } }
      },
    ],
  }
}

/** The id in a request URL (the first path segment after the collection), replaced. */
function withId(url: string, id: string): string {
  const [path, query] = url.split('?')
  const parts = path!.split('/')
  parts[2] = id
  return parts.join('/') + (query ? `?${query}` : '')
}

const ACCEPTS_BODY = new Set(['POST', 'PUT', 'DELETE'])
/** A new Idempotency-Key for a POST: every POST takes one, and payment operations need one. */
const keyFor = (method: string): Record<string, string> => (method.toLowerCase() === 'post' ? { 'idempotency-key': randomUUID() } : {})

for (const kind of storeKinds()) {
  describe(`every answer is declared in /openapi.json (${kind.name})`, () => {
    let t: TestApp
    let contract: OpenApiContract
    let valid: Record<string, Maker>
    const problems: string[] = []
    const seen = new Map<string, Set<number>>()
    let seed = 0

    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' })
      contract = new OpenApiContract((await t.inject({ method: 'GET', url: '/openapi.json' })).body)
      valid = validRequests(t)
    })
    after(async () => { await t.close() })

    /** Sends the request and records whatever in the answer the document does not declare. */
    async function send(inject: (options: any) => Promise<any>, key: string | null, request: Request): Promise<Response> {
      const headers: Record<string, string> = { ...request.headers }
      if (key !== null && headers.authorization === undefined) headers.authorization = `Bearer ${key}`
      let payload: string | undefined
      if (request.body !== undefined) {
        payload = typeof request.body === 'string' ? request.body : JSON.stringify(request.body)
        headers['content-type'] ??= 'application/json'
      }
      const options = { method: request.method, url: request.url, headers, ...(payload !== undefined ? { payload } : {}) }
      const res = toResponse(isEventStream(request.url) ? await injectEventStream(inject, options as never) : await inject(options))
      const exchange: Exchange = { method: request.method, url: request.url, requestBody: payload, status: res.status, headers: res.headers, raw: res.raw }
      problems.push(...contract.problems(exchange).map((p) => `${p}\n    request: ${request.method} ${request.url.slice(0, 120)} ${payload?.slice(0, 120) ?? ''}`))
      const operation = contract.find(request.method, request.url)
      if (operation) {
        if (!seen.has(operation.key)) seen.set(operation.key, new Set())
        seen.get(operation.key)!.add(res.status)
      }
      return res
    }

    const authenticated = (o: Operation) => (o.op.security ?? contract.doc.security).length > 0

    test('every operation has a valid request here, which succeeds', async () => {
      for (const o of contract.operations) {
        const a = await t.account()
        assert.ok(valid[o.op.operationId], `no valid request for ${o.op.operationId}: add one to validRequests()`)
        const request = await valid[o.op.operationId]!(a, ++seed)
        const res = await send(t.app.inject.bind(t.app), a.key, { ...request, headers: { ...request.headers, ...keyFor(o.method) } })
        assert.ok(res.status >= 200 && res.status < 300, `${o.key}: ${res.status} ${res.raw}`)
      }
    })

    test('authentication: no key, a bad key, a read key', async () => {
      for (const o of contract.operations.filter(authenticated)) {
        const a = await t.account()
        const request = await valid[o.op.operationId]!(a, ++seed)
        assert.equal((await send(t.app.inject.bind(t.app), null, request)).status, 401, o.key)
        const bad = await send(t.app.inject.bind(t.app), `sk_${'x'.repeat(40)}`, request)
        assert.ok([401, 429].includes(bad.status), `${o.key}: ${bad.status}`)
        const read = await send(t.app.inject.bind(t.app), a.readKey, request)
        if (o.method !== 'get') assert.equal(read.status, 403, o.key)
      }
    })

    test('ids: unknown, too long for an id, too long for a path segment, not percent-encoding', async () => {
      for (const o of contract.operations.filter((x) => x.path.includes('{'))) {
        const a = await t.account()
        const request = await valid[o.op.operationId]!(a, ++seed)
        const headers = { ...request.headers, ...keyFor(o.method) }
        assert.equal((await send(t.app.inject.bind(t.app), a.key, { ...request, headers, url: withId(request.url, 'x_unknown') })).status, 404, o.key)
        assert.equal((await send(t.app.inject.bind(t.app), a.key, { ...request, url: withId(request.url, 'x'.repeat(256)) })).status, 400, o.key)
        assert.equal((await send(t.app.inject.bind(t.app), a.key, { ...request, url: withId(request.url, 'x'.repeat(5000)) })).status, 414, o.key)
        assert.equal((await send(t.app.inject.bind(t.app), a.key, { ...request, url: withId(request.url, '%zz') })).status, 400, o.key)
      }
    })

    test('query strings: out of range, unknown parameters', async () => {
      for (const o of contract.operations) {
        const a = await t.account()
        const request = await valid[o.op.operationId]!(a, ++seed)
        for (const query of ['limit=0', 'offset=-1', 'colour=red', 'limit=1e3']) {
          const url = `${request.url}${request.url.includes('?') ? '&' : '?'}${query}`
          await send(t.app.inject.bind(t.app), a.key, { ...request, url, headers: { ...request.headers, ...keyFor(o.method) } })
        }
      }
    })

    test('bodies: malformed, another media type, too large, unknown members, absent', async () => {
      for (const o of contract.operations) {
        const a = await t.account()
        const make = () => valid[o.op.operationId]!(a, ++seed)
        const key = () => keyFor(o.method)
        const expectIfParsed = (status: number) => (ACCEPTS_BODY.has(o.method.toUpperCase()) ? status : undefined)
        const cases: Array<[Request['body'], Record<string, string>, number | undefined]> = [
          ['{"', {}, expectIfParsed(400)],
          ['hello', { 'content-type': 'text/plain' }, expectIfParsed(415)],
          [JSON.stringify({ padding: 'x'.repeat(ONE_MIB) }), {}, expectIfParsed(413)],
          ['[]', {}, undefined],
          ['null', {}, undefined],
        ]
        for (const [body, headers, expected] of cases) {
          const request = await make()
          const res = await send(t.app.inject.bind(t.app), a.key, { ...request, body, headers: { ...request.headers, ...key(), ...headers } })
          if (expected !== undefined) assert.equal(res.status, expected, `${o.key} ${String(body).slice(0, 20)}: ${res.raw}`)
        }
        if (o.op.requestBody) {
          const request = await make()
          const body = { ...(request.body as object), unknown_member: 1 }
          assert.equal((await send(t.app.inject.bind(t.app), a.key, { ...request, body, headers: { ...request.headers, ...key() } })).status, 400, o.key)
          const { body: _dropped, ...withoutBody } = await make()
          const res = await send(t.app.inject.bind(t.app), a.key, { ...withoutBody, headers: { ...withoutBody.headers, ...key() } })
          // Left out, the body is validated as {}: it may be left out exactly when the document says so.
          assert.equal(res.status < 300, !o.op.requestBody.required, `${o.key} without a body: ${res.status} ${res.raw}`)
        }
      }
    })

    test('idempotency keys: replayed, reused for another request, mismatched, missing', async () => {
      for (const o of contract.operations.filter((x) => x.method === 'post')) {
        const a = await t.account()
        const key = randomUUID()
        const first = await valid[o.op.operationId]!(a, ++seed)
        const original = await send(t.app.inject.bind(t.app), a.key, { ...first, headers: { ...first.headers, 'idempotency-key': key } })
        const replay = await send(t.app.inject.bind(t.app), a.key, { ...first, headers: { ...first.headers, 'idempotency-key': key } })
        assert.equal(replay.status, original.status, o.key)
        assert.equal(replay.headers['idempotent-replayed'], 'true', o.key)
        const other = await valid[o.op.operationId]!(a, ++seed)
        // An operation whose every valid request is the same (POST /ap2/nonces, {}) has no "other" request.
        if (JSON.stringify(other) !== JSON.stringify(first)) {
          const conflict = await send(t.app.inject.bind(t.app), a.key, { ...other, headers: { ...other.headers, 'idempotency-key': key } })
          assert.equal(conflict.status, 422, o.key)
          if (o.op.operationId === 'delegatePayment') assert.equal(conflict.body.code, 'idempotency_conflict', conflict.raw)
        }

        const mismatched = await valid[o.op.operationId]!(a, ++seed)
        const body = { ...(mismatched.body as object), idempotency_key: 'in-the-body' }
        // Wishpay's routes: a body key unlike the header's is 400. ACP's body has no idempotency_key
        // member (additionalProperties false): the same request is 400 as an unknown member, in ACP's shape.
        const twoKeys = await send(t.app.inject.bind(t.app), a.key, { ...mismatched, body, headers: { ...mismatched.headers, 'idempotency-key': 'in-the-header' } })
        assert.equal(twoKeys.status, 400, o.key)
        if (o.op.operationId === 'delegatePayment') assert.equal(twoKeys.body.type, 'invalid_request', twoKeys.raw)
        const noKey = await send(t.app.inject.bind(t.app), a.key, await valid[o.op.operationId]!(a, ++seed))
        // ACP requires the header (no body key to fall back on): 400 idempotency_key_required, as the official example.
        if (o.op.operationId === 'delegatePayment') assert.deepEqual([noKey.status, noKey.body], [400, ACP_EXAMPLES.delegate_payment_error_idempotency_key_required])
        const invalid = await valid[o.op.operationId]!(a, ++seed)
        await send(t.app.inject.bind(t.app), a.key, { ...invalid, headers: { ...invalid.headers, 'idempotency-key': 'é' } })
      }
      // A saved refusal (404, 422) is replayed as it was answered.
      const a = await t.account()
      const refused = { method: 'POST', url: '/payments', body: { mandate_id: 'mdt_unknown', amount: 100 }, headers: { 'idempotency-key': randomUUID() } }
      assert.equal((await send(t.app.inject.bind(t.app), a.key, refused)).status, 422)
      assert.equal((await send(t.app.inject.bind(t.app), a.key, refused)).headers['idempotent-replayed'], 'true')
    })

    test('refusals of the services: state transitions, mandate and payment rules, bad URLs', async () => {
      for (const [operationId, makers] of Object.entries(serviceRefusals(t))) {
        assert.ok(contract.operations.some((o) => o.op.operationId === operationId), operationId)
        for (const maker of makers) {
          const a = await t.account()
          const request = await maker(a)
          const res = await send(t.app.inject.bind(t.app), a.key, { ...request, headers: { ...request.headers, ...keyFor(request.method) } })
          assert.ok(res.status >= 400 && res.status < 500, `${operationId}: ${res.status} ${res.raw}`)
        }
      }
    })

    test('the rate limit', async () => {
      const limited = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_PER_SECOND: '1' })
      try {
        const limitedValid = validRequests(limited)
        for (const o of contract.operations.filter(authenticated)) {
          const a = await limited.account()
          // The fixtures are made first (they use up this key's allowance too).
          const requests = []
          for (let i = 0; i < 10; i++) requests.push(await limitedValid[o.op.operationId]!(a, ++seed).catch(() => undefined))
          let statuses: number[] = []
          for (const request of requests) {
            if (!request) continue
            const headers = { ...request.headers, ...keyFor(o.method) }
            statuses.push((await send(limited.app.inject.bind(limited.app), a.key, { ...request, headers })).status)
            if (statuses.includes(429)) break
          }
          // A burst that a loaded machine spread over two windows: once more, back to back.
          if (!statuses.includes(429)) {
            statuses = []
            for (let i = 0; i < 5 && !statuses.includes(429); i++) statuses.push((await send(limited.app.inject.bind(limited.app), a.key, { method: 'GET', url: '/events' })).status)
          }
          assert.ok(statuses.includes(429), `${o.key}: never limited (${statuses.join(', ')})`)
        }
      } finally {
        await limited.close()
      }
    })

    test('a draining server', async () => {
      const draining = await buildApp({ config: t.config, db: t.store.db, clock: t.clock, lifecycle: { draining: true } })
      try {
        for (const o of contract.operations) {
          const a = await t.account()
          const request = await valid[o.op.operationId]!(a, ++seed)
          assert.equal((await send(draining.inject.bind(draining), a.key, request)).status, 503, o.key)
        }
      } finally {
        await draining.close()
      }
    })

    test('an unreachable database', async () => {
      const closed = await startAppWithClosedDatabase(kind)
      try {
        for (const o of contract.operations) {
          const url = o.path.replace(/\{[^}]+\}/g, 'x_1')
          const body = o.op.requestBody ? {} : undefined
          await send(closed.app.inject.bind(closed.app), closed.key, { method: o.method.toUpperCase(), url, body, headers: keyFor(o.method) })
        }
      } finally {
        await closed.close()
      }
    })

    test('nothing observed was undeclared or unlike its schema', () => {
      assert.deepEqual(problems, [])
      // Each operation was driven to more than its success.
      for (const o of contract.operations) {
        const statuses = [...(seen.get(o.key) ?? [])]
        assert.ok(statuses.some((s) => s >= 400), `${o.key}: no failure observed (${statuses.join(', ')})`)
      }
    })
  })
}

