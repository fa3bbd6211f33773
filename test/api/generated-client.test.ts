import assert from 'node:assert/strict'
import fs from 'node:fs'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import openapiTS, { astToString } from 'openapi-typescript'
import ts from 'typescript'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { type Exchange, OpenApiContract } from '../helpers/openapi-contract.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * A client generated from the live /openapi.json must compile under the strictest settings when it
 * sends only what the contract requires, and, run against a listening server, every answer it gets
 * must be the expected status and conform to the document (as Prism's validating proxy checks).
 */

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/**
 * The client program. Each call sends the contract's required members only. `typeChecks` is never
 * run: each of its lines must be a type error (an unused @ts-expect-error fails the compile), which
 * shows that the generated types are strict, not `any`.
 */
const PROGRAM = `import createClient from 'openapi-fetch'
import type { components, paths } from './schema.js'

type Wish = components['schemas']['Wish']
type Mandate = components['schemas']['Mandate']
type Payment = components['schemas']['Payment']
type Refund = components['schemas']['Refund']
type WishStatus = 'active' | 'pending' | 'fulfilled' | 'cancelled' | 'expired'

export interface Call { operation: string, status: number }

const FAR_FUTURE = '2099-12-31T23:59:59.000Z'

function must<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(what + ': no data')
  return value
}

export async function run(baseUrl: string, key: string, fetchImpl: (request: Request) => Promise<Response>, unique: string): Promise<Call[]> {
  const calls: Call[] = []
  const seen = (operation: string, response: Response): void => { calls.push({ operation, status: response.status }) }
  const client = createClient<paths>({ baseUrl, fetch: fetchImpl, headers: { Authorization: 'Bearer ' + key } })

  // Wishes
  const createdWish = await client.POST('/wishes', { body: { query: 'Noise-cancelling headphones' } })
  seen('createWish', createdWish.response)
  const wish: Wish = must(createdWish.data, 'createWish').data
  const wishStatus: WishStatus = wish.status
  const budgetMax: number | null | undefined = wish.budget?.max
  void wishStatus
  void budgetMax
  seen('listWishes', (await client.GET('/wishes')).response)
  seen('getWish', (await client.GET('/wishes/{id}', { params: { path: { id: wish.id } } })).response)
  seen('updateWish', (await client.PUT('/wishes/{id}', { params: { path: { id: wish.id } } })).response)

  const missing = await client.GET('/wishes/{id}', { params: { path: { id: 'wish_missing' } } })
  seen('getWish', missing.response)
  const missingCode: string | undefined = missing.error?.error.code
  if (missingCode !== 'resource_missing') throw new Error('getWish: expected resource_missing, got ' + String(missingCode))

  // Mandates
  const createdMandate = await client.POST('/mandates', { body: { protocol: 'ap2', max_amount: 5000, expires_at: FAR_FUTURE } })
  seen('createMandate', createdMandate.response)
  const mandate: Mandate = must(createdMandate.data, 'createMandate').data
  const usage: 'single_use' | 'multi_use' = mandate.usage
  void usage
  seen('getMandate', (await client.GET('/mandates/{id}', { params: { path: { id: mandate.id } } })).response)
  seen('listMandates', (await client.GET('/mandates')).response)

  // Payments and refunds
  const createdPayment = await client.POST('/payments', { body: { mandate_id: mandate.id, amount: 1999, idempotency_key: 'client-payment-' + unique } })
  seen('createPayment', createdPayment.response)
  const payment: Payment = must(createdPayment.data, 'createPayment').data
  seen('getPayment', (await client.GET('/payments/{id}', { params: { path: { id: payment.id } } })).response)
  seen('listPayments', (await client.GET('/payments')).response)
  const refunded = await client.POST('/payments/{id}/refunds', { params: { path: { id: payment.id }, header: { 'Idempotency-Key': 'client-refund-' + unique } } })
  seen('createRefund', refunded.response)
  const refund: Refund = must(refunded.data, 'createRefund').data
  if (refund.amount !== 1999) throw new Error('createRefund: expected the whole payment refunded')
  seen('listRefunds', (await client.GET('/payments/{id}/refunds', { params: { path: { id: payment.id } } })).response)

  // A pending bank transfer, settled at once (the sandbox's test-mode convenience)
  const transferMandate = await client.POST('/mandates', { body: { protocol: 'ap2', max_amount: 5000, expires_at: FAR_FUTURE } })
  seen('createMandate', transferMandate.response)
  const transfer = await client.POST('/payments', { body: { mandate_id: must(transferMandate.data, 'createMandate').data.id, amount: 500, payment_method: 'bank_transfer', idempotency_key: 'client-transfer-' + unique } })
  seen('createPayment', transfer.response)
  const settled = await client.POST('/payments/{id}/settle', { params: { path: { id: must(transfer.data, 'createPayment').data.id } } })
  seen('settlePayment', settled.response)
  if (must(settled.data, 'settlePayment').data.status !== 'succeeded') throw new Error('settlePayment: expected succeeded')

  const refused = await client.POST('/payments', { body: { mandate_id: 'mdt_missing', amount: 100, idempotency_key: 'client-refused-' + unique } })
  seen('createPayment', refused.response)
  if (refused.error?.error.code !== 'mandate_not_found') throw new Error('createPayment: expected mandate_not_found')

  const toRevoke = must((await client.POST('/mandates', { body: { protocol: 'ap2', max_amount: 100, expires_at: FAR_FUTURE } })).data, 'createMandate').data
  seen('revokeMandate', (await client.POST('/mandates/{id}/revoke', { params: { path: { id: toRevoke.id } } })).response)

  // Events
  const events = await client.GET('/events')
  seen('listEvents', events.response)
  const event = must(must(events.data, 'listEvents').data[0], 'listEvents: no event')
  seen('getEvent', (await client.GET('/events/{id}', { params: { path: { id: event.id } } })).response)
  // The stream stays open: its answer is taken as it starts, then the request is aborted.
  const streaming = new AbortController()
  const stream = await client.GET('/events/stream', { parseAs: 'stream', signal: streaming.signal })
  seen('streamEvents', stream.response)
  streaming.abort()

  // Webhook endpoints
  const createdEndpoint = await client.POST('/webhook_endpoints', { body: { url: 'https://example.org/hooks/wishpay', events: ['payment.succeeded'] } })
  seen('createWebhookEndpoint', createdEndpoint.response)
  const endpoint = must(createdEndpoint.data, 'createWebhookEndpoint').data
  const secret: string = endpoint.secret
  void secret
  seen('listWebhookEndpoints', (await client.GET('/webhook_endpoints')).response)
  seen('getWebhookEndpoint', (await client.GET('/webhook_endpoints/{id}', { params: { path: { id: endpoint.id } } })).response)
  seen('updateWebhookEndpoint', (await client.PUT('/webhook_endpoints/{id}', { params: { path: { id: endpoint.id } } })).response)
  seen('listWebhookDeliveries', (await client.GET('/webhook_endpoints/{id}/deliveries', { params: { path: { id: endpoint.id } } })).response)
  // Nothing was delivered to example.org yet: a resend of an attempt that is not there is 404.
  seen('resendWebhookDelivery', (await client.POST('/webhook_deliveries/{id}/resend', { params: { path: { id: 'wha_missing' } } })).response)
  seen('deleteWebhookEndpoint', (await client.DELETE('/webhook_endpoints/{id}', { params: { path: { id: endpoint.id } } })).response)

  // Agents
  const createdAgent = await client.POST('/agents', { body: { name: 'Shopping assistant' } })
  seen('createAgent', createdAgent.response)
  const agent = must(createdAgent.data, 'createAgent').data
  seen('listAgents', (await client.GET('/agents')).response)
  seen('getAgent', (await client.GET('/agents/{id}', { params: { path: { id: agent.id } } })).response)
  const agentKey = await client.POST('/agents/{id}/keys', { params: { path: { id: agent.id } } })
  seen('createAgentKey', agentKey.response)
  if (!must(agentKey.data, 'createAgentKey').data.key.startsWith('ak_')) throw new Error('createAgentKey: expected an ak_ key')
  seen('disableAgent', (await client.POST('/agents/{id}/disable', { params: { path: { id: agent.id } } })).response)

  // Trusted keys
  const createdTrustedKey = await client.POST('/trusted_keys', { body: { role: 'trusted_agent_provider', public_jwk: { kty: 'EC', crv: 'P-256', kid: 'provider-key-1', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' } } })
  seen('createTrustedKey', createdTrustedKey.response)
  const trustedKey = must(createdTrustedKey.data, 'createTrustedKey').data
  seen('listTrustedKeys', (await client.GET('/trusted_keys')).response)
  seen('getTrustedKey', (await client.GET('/trusted_keys/{id}', { params: { path: { id: trustedKey.id } } })).response)
  seen('revokeTrustedKey', (await client.POST('/trusted_keys/{id}/revoke', { params: { path: { id: trustedKey.id } } })).response)
  // AP2: a nonce; a plain payment has no receipt (404)
  seen('createAp2Nonce', (await client.POST('/ap2/nonces', { body: {} })).response)
  seen('getPaymentReceipt', (await client.GET('/payments/{id}/receipt', { params: { path: { id: payment.id } } })).response)

  seen('deleteWish', (await client.DELETE('/wishes/{id}', { params: { path: { id: wish.id } } })).response)

  // ACP: delegate a card (ACP's API-Version and Idempotency-Key headers), read and revoke the vault token
  const delegated = await client.POST('/agentic_commerce/delegate_payment', {
    params: { header: { 'API-Version': '2026-04-17', 'Idempotency-Key': 'client-acp-' + unique } },
    body: {
      payment_method: { type: 'card', card_number_type: 'fpan', number: '4242424242424242', display_card_funding_type: 'credit', metadata: {} },
      allowance: { reason: 'one_time', max_amount: 2000, currency: 'usd', checkout_session_id: 'csn_client_' + unique, merchant_id: 'acme_store', expires_at: FAR_FUTURE },
      risk_signals: [{ type: 'card_testing', score: 10, action: 'manual_review' }],
      metadata: {},
    },
  })
  seen('delegatePayment', delegated.response)
  const vaultTokenId: string = must(delegated.data, 'delegatePayment').id
  seen('getVaultToken', (await client.GET('/vault_tokens/{id}', { params: { path: { id: vaultTokenId } } })).response)
  seen('revokeVaultToken', (await client.POST('/vault_tokens/{id}/revoke', { params: { path: { id: vaultTokenId } } })).response)
  seen('getAcpDiscovery', (await client.GET('/.well-known/acp.json')).response)

  // System
  seen('getHealth', (await client.GET('/healthz')).response)
  seen('getReadiness', (await client.GET('/readyz')).response)
  seen('getOpenApi', (await client.GET('/openapi.json')).response)
  seen('getJwks', (await client.GET('/.well-known/jwks.json')).response)
  seen('getMetrics', (await client.GET('/metrics', { parseAs: 'text' })).response)
  return calls
}

export async function typeChecks(client: ReturnType<typeof createClient<paths>>): Promise<void> {
  // @ts-expect-error query is required
  await client.POST('/wishes', { body: {} })
  // @ts-expect-error unknown members are refused (openapi-fetch infers its init, so checked on the type)
  const body: NonNullable<paths['/wishes']['post']['requestBody']>['content']['application/json'] = { query: 'x', colour: 'red' }
  void body
  // @ts-expect-error an optional member is left out, never set to undefined (exactOptionalPropertyTypes)
  await client.POST('/wishes', { body: { query: 'x', category: undefined } })
  // (expires_at and max_amount are required unless ap2 is sent: an if/else that generated types leave out.)
  // @ts-expect-error max_amount is an integer count of minor units, not a string
  await client.POST('/mandates', { body: { protocol: 'ap2', max_amount: '5000', expires_at: FAR_FUTURE } })
  // @ts-expect-error protocol is ap2 or acp
  await client.POST('/mandates', { body: { protocol: 'auto', max_amount: 5000, expires_at: FAR_FUTURE } })
  // @ts-expect-error amount is required
  await client.POST('/payments', { body: { mandate_id: 'mdt_x', idempotency_key: 'k' } })
  // @ts-expect-error amount is an integer count of minor units, not a string
  await client.POST('/payments', { body: { mandate_id: 'mdt_x', amount: '100', idempotency_key: 'k' } })
  // @ts-expect-error the id is a path parameter
  await client.GET('/payments/{id}')
  // @ts-expect-error limit is a number
  await client.GET('/wishes', { params: { query: { limit: 'ten' } } })
  // @ts-expect-error a status that does not exist
  await client.GET('/payments', { params: { query: { status: 'paid' } } })

  const answer = await client.GET('/wishes/{id}', { params: { path: { id: 'wish_x' } } })
  if (answer.error) {
    // @ts-expect-error error codes are an enumeration
    const code: typeof answer.error.error.code = 'no_such_code'
    void code
  }
}
`

interface Compiled {
  dir: string
  diagnostics: string
}

/** Writes the generated types and the program into a new directory and type-checks them. */
async function generateAndCompile(doc: unknown): Promise<Compiled> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-client-'))
  fs.symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir')
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
  // Written as .ts, not .d.ts, so that skipLibCheck (for the libraries) does not skip it.
  fs.writeFileSync(path.join(dir, 'schema.ts'), astToString(await openapiTS(doc as never)))
  fs.writeFileSync(path.join(dir, 'client.ts'), PROGRAM)

  const options: ts.CompilerOptions = {
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noImplicitReturns: true,
    noUnusedLocals: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: [],
    skipLibCheck: true,
  }
  const program = ts.createProgram([path.join(dir, 'client.ts'), path.join(dir, 'schema.ts')], options)
  const found = ts.getPreEmitDiagnostics(program)
  const diagnostics = ts.formatDiagnostics(found, {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => dir,
    getNewLine: () => '\n',
  })
  return { dir, diagnostics }
}

const EXPECTED: Array<[string, number]> = [
  ['createWish', 201], ['listWishes', 200], ['getWish', 200], ['updateWish', 200], ['getWish', 404],
  ['createMandate', 201], ['getMandate', 200], ['listMandates', 200],
  ['createPayment', 201], ['getPayment', 200], ['listPayments', 200], ['createRefund', 201], ['listRefunds', 200],
  ['createMandate', 201], ['createPayment', 201], ['settlePayment', 200],
  ['createPayment', 422], ['revokeMandate', 200],
  ['listEvents', 200], ['getEvent', 200], ['streamEvents', 200],
  ['createWebhookEndpoint', 201], ['listWebhookEndpoints', 200], ['getWebhookEndpoint', 200], ['updateWebhookEndpoint', 200],
  ['listWebhookDeliveries', 200], ['resendWebhookDelivery', 404], ['deleteWebhookEndpoint', 204],
  ['createAgent', 201], ['listAgents', 200], ['getAgent', 200], ['createAgentKey', 201], ['disableAgent', 200],
  ['createTrustedKey', 201], ['listTrustedKeys', 200], ['getTrustedKey', 200], ['revokeTrustedKey', 200],
  ['createAp2Nonce', 201], ['getPaymentReceipt', 404],
  ['deleteWish', 204],
  ['delegatePayment', 201], ['getVaultToken', 200], ['revokeVaultToken', 200], ['getAcpDiscovery', 200],
  ['getHealth', 200], ['getReadiness', 200], ['getOpenApi', 200], ['getJwks', 200], ['getMetrics', 200],
]

/** A response's body; an event stream never ends, so its body is not read (the program aborts it). */
async function bodyOf(response: Response): Promise<string> {
  return (response.headers.get('content-type') ?? '').startsWith('text/event-stream') ? '' : response.text()
}

let compiled: Promise<Compiled> | undefined
const dirs: string[] = []

for (const kind of storeKinds()) {
  describe(`generated client (${kind.name})`, () => {
    let t: TestApp
    let a: TestAccount
    let baseUrl: string
    let doc: any
    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' })
      a = await t.account()
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
      const res = await fetch(`${baseUrl}/openapi.json`)
      assert.equal(res.status, 200)
      doc = await res.json()
      // The document does not depend on the store: generated and compiled once.
      compiled ??= generateAndCompile(doc).then((c) => { dirs.push(c.dir); return c })
    })
    after(async () => { await t.close() })

    test('the generated types and a strict client program that sends only required members compile', async () => {
      const { diagnostics } = await compiled!
      assert.equal(diagnostics, '', diagnostics)
    })

    test('the program gets the expected statuses, and every exchange conforms to the document', async () => {
      const { dir, diagnostics } = await compiled!
      assert.equal(diagnostics, '', 'the program does not compile')
      const contract = new OpenApiContract(doc)
      const exchanges: Exchange[] = []
      const recordingFetch = async (request: Request): Promise<Response> => {
        const requestBody = request.body ? await request.clone().text() : undefined
        const response = await fetch(request)
        const url = new URL(request.url)
        exchanges.push({
          method: request.method,
          url: url.pathname + url.search,
          requestBody,
          requestContentType: request.headers.get('content-type') ?? undefined,
          status: response.status,
          headers: Object.fromEntries(response.headers),
          raw: await bodyOf(response.clone()),
        })
        return response
      }
      const program = await import(pathToFileURL(path.join(dir, 'client.ts')).href) as {
        run(baseUrl: string, key: string, fetchImpl: typeof recordingFetch, unique: string): Promise<Array<{ operation: string, status: number }>>
      }
      const calls = await program.run(baseUrl, a.key, recordingFetch, kind.name)

      assert.deepEqual(calls.map((c) => [c.operation, c.status]), EXPECTED)
      const operationIds = contract.operations.map((o) => o.op.operationId as string).sort()
      assert.deepEqual([...new Set(calls.map((c) => c.operation))].sort(), operationIds, 'the program calls every operation')

      assert.equal(exchanges.length, calls.length + 1) // and the mandate made to be revoked
      const problems = exchanges.flatMap((e) => contract.problems(e, { checkRequest: true }))
      assert.deepEqual(problems, [])
    })
  })
}

after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})
