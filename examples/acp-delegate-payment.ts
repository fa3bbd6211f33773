/**
 * ACP's Delegate Payment API (Agentic Commerce Protocol 2026-04-17) with Wishpay, end to end. Two
 * parties take part, both with the account's sk_ key:
 *   - the agent platform delegates the buyer's card, within an allowance, for one merchant and one
 *     checkout session: POST /agentic_commerce/delegate_payment gives a vault token (vt_…);
 *   - the merchant's PSP redeems the token once: POST /payments with vault_token, merchant_id and
 *     checkout_session_id instead of mandate_id.
 *
 *   WISHPAY_API_KEY=sk_... npx tsx examples/acp-delegate-payment.ts
 *
 * WISHPAY_URL defaults to http://127.0.0.1:3000. Exits non-zero on any unexpected answer.
 */
import { randomUUID } from 'node:crypto'

const BASE = (process.env.WISHPAY_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '')
const SK = process.env.WISHPAY_API_KEY ?? ''
if (!SK.startsWith('sk_')) fail('set WISHPAY_API_KEY to a secret key (sk_...), e.g. the one `npm start` prints')

const ACP_VERSION = '2026-04-17'

function fail(message: string): never {
  console.error(`FAILED: ${message}`)
  process.exit(1)
}

// The members of the answers this example reads.
interface Delegated { id: string, created: string, metadata: Record<string, string> }
interface VaultToken {
  id: string, mandate_id: string, status: string, merchant_id: string, checkout_session_id: string
  allowance: { reason: string, max_amount: number, currency: string, expires_at: string }
  card: Record<string, unknown> & { brand: string, last4: string | null, fingerprint: string }
}
interface Payment { id: string, status: string, amount: number, currency: string, protocol_type: string, mandate_id: string }

/** One API call; anything but the expected status ends the example. Returns the parsed body and the headers. */
async function call<T>(method: string, path: string, body: unknown, expect: number, headers: Record<string, string> = {}): Promise<{ body: T, headers: Headers, text: string }> {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${SK}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  if (res.status !== expect) fail(`${method} ${path}: expected ${expect}, got ${res.status} ${text}`)
  return { body: JSON.parse(text) as T, headers: res.headers, text }
}

const step = (text: string) => console.log(`\n== ${text}`)

// One checkout session per run, so the example can run again against the same server.
const merchantId = 'acme_store'
const checkoutSessionId = `csn_${randomUUID()}`
const expYear = String(new Date().getUTCFullYear() + 2)

// (a) The agent platform delegates a test card: at most 2000 (minor units, $20.00) for this merchant
// and checkout session, for an hour. ACP requires API-Version and Idempotency-Key.
step('a. agent platform delegates a card (POST /agentic_commerce/delegate_payment)')
const delegation = {
  payment_method: {
    type: 'card', card_number_type: 'fpan', virtual: false, number: '4242424242424242', exp_month: '11', exp_year: expYear, name: 'Jane Doe', cvc: '223',
    checks_performed: ['avs', 'cvv'], iin: '424242', display_card_funding_type: 'credit', display_brand: 'visa', display_last4: '4242', metadata: {},
  },
  allowance: {
    reason: 'one_time', max_amount: 2000, currency: 'usd', checkout_session_id: checkoutSessionId, merchant_id: merchantId,
    expires_at: new Date(Date.now() + 3600_000).toISOString(),
  },
  billing_address: { name: 'Jane Doe', line_one: '1234 Chat Road', city: 'San Francisco', state: 'CA', country: 'US', postal_code: '94131' },
  risk_signals: [{ type: 'card_testing', score: 10, action: 'authorized' }],
  metadata: { source: 'acp-example' },
}
const acpHeaders = { 'api-version': ACP_VERSION, 'idempotency-key': randomUUID() }
const first = await call<Delegated>('POST', '/agentic_commerce/delegate_payment', delegation, 201, acpHeaders)
const token = first.body.id
if (!token.startsWith('vt_')) fail(`expected a vault token vt_…, got ${first.text}`)
if (first.headers.get('api-version') !== ACP_VERSION) fail(`expected API-Version ${ACP_VERSION}, got ${first.headers.get('api-version')}`)
if (first.body.metadata.merchant_id !== merchantId || first.body.metadata.idempotency_key !== acpHeaders['idempotency-key']) {
  fail(`metadata does not echo merchant_id and idempotency_key: ${first.text}`)
}
console.log(`vault token ${token}, created ${first.body.created}`)
console.log(`metadata ${JSON.stringify(first.body.metadata)}`)

// (b) A retry with the same Idempotency-Key (a lost answer, say) gets the first answer back: no second token.
step('b. the same request retried with the same Idempotency-Key')
const retry = await call<Delegated>('POST', '/agentic_commerce/delegate_payment', delegation, 201, acpHeaders)
if (retry.headers.get('idempotent-replayed') !== 'true' || retry.text !== first.text) fail(`expected the first answer replayed, got ${retry.text}`)
console.log(`replayed: Idempotent-Replayed: true, same token ${retry.body.id}`)

// (c) Wishpay's view of the token: the allowance, and of the card only what can be shown.
step('c. the vault token (GET /vault_tokens/:id)')
const read = (await call<{ data: VaultToken }>('GET', `/vault_tokens/${token}`, undefined, 200)).body.data
const { card } = read
if (read.status !== 'active' || card.brand !== 'visa' || card.last4 !== '4242' || !/^[A-Za-z0-9_-]{43}$/.test(card.fingerprint)) {
  fail(`unexpected vault token: ${JSON.stringify(read)}`)
}
if ('number' in card || 'cvc' in card || JSON.stringify(read).includes('4242424242424242')) fail('the vault token shows the card number or CVC')
console.log(`status ${read.status}, ${read.allowance.max_amount} ${read.allowance.currency} for ${read.merchant_id} / ${read.checkout_session_id}, until ${read.allowance.expires_at}`)
console.log(`card kept as brand ${card.brand}, last4 ${card.last4}, fingerprint ${card.fingerprint} (no number, no CVC)`)
console.log(`it is mandate ${read.mandate_id} (protocol acp, single_use)`)

// (d) The merchant's PSP charges the checkout with the token, within the allowance.
step('d. merchant\'s PSP redeems the token (POST /payments with vault_token)')
const redemption = { vault_token: token, merchant_id: merchantId, checkout_session_id: checkoutSessionId, amount: 1500, currency: 'usd' }
const payment = (await call<{ data: Payment }>('POST', '/payments', redemption, 201, { 'idempotency-key': randomUUID() })).body.data
if (payment.status !== 'succeeded' || payment.protocol_type !== 'acp' || payment.mandate_id !== read.mandate_id) fail(`unexpected payment: ${JSON.stringify(payment)}`)
console.log(`payment ${payment.id}: ${payment.status}, ${payment.amount} ${payment.currency}, protocol ${payment.protocol_type}`)

// (e) A token pays once. A new Idempotency-Key makes this a new request, not a retry, so the token
// itself is refused (a retry under the first key would replay the first answer instead).
step('e. the same token again')
const again = (await call<{ error?: { type: string, code: string } }>('POST', '/payments', redemption, 422, { 'idempotency-key': randomUUID() })).body
if (again.error?.code !== 'mandate_consumed') fail(`expected mandate_consumed, got ${JSON.stringify(again)}`)
console.log(`refused: 422 ${again.error.code}`)
const after = (await call<{ data: VaultToken }>('GET', `/vault_tokens/${token}`, undefined, 200)).body.data
if (after.status !== 'consumed') fail(`expected the token consumed, got ${after.status}`)
console.log(`vault token ${token} is now ${after.status}`)

console.log('\nACP delegate payment example complete.')
