/**
 * AP2 with Wishpay, end to end, with real keys. Three parties take part:
 *   - the issuer (a Trusted Agent Provider) signs the user's open Payment Mandate;
 *   - the user's account (an sk_ key) trusts the issuer, registers the agent and makes the mandate;
 *   - the agent (its own ak_ key and key pair) signs one closed Payment Mandate per payment.
 *
 *   WISHPAY_API_KEY=sk_... npx tsx examples/ap2-walkthrough.ts
 *
 * WISHPAY_URL defaults to http://127.0.0.1:3000. Exits non-zero on any unexpected answer.
 */
import { createHash, randomUUID, subtle } from 'node:crypto'
import { SDJwtInstance, type SdJwtPayload } from '@sd-jwt/core'
import { digest, generateSalt } from '@sd-jwt/crypto-nodejs'
import { createLocalJWKSet, type CryptoKey, exportJWK, generateKeyPair, type JSONWebKeySet, type JWK, jwtVerify } from 'jose'

const BASE = (process.env.WISHPAY_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '')
const SK = process.env.WISHPAY_API_KEY ?? ''
if (!SK.startsWith('sk_')) fail('set WISHPAY_API_KEY to a secret key (sk_...), e.g. the one `npm start` prints')

function fail(message: string): never {
  console.error(`FAILED: ${message}`)
  process.exit(1)
}

// The members of Wishpay's answers this walkthrough reads.
interface Mandate {
  id: string, currency: string, max_amount: number, budget_amount: number, expires_at: string
  ap2: { min_amount: number | null, recurrence: { frequency: string, max_occurrences: number | null }, allowed_payees: { id: string }[], allowed_payment_instruments: { id: string }[] }
}
interface Payment { id: string, status: string, amount: number, currency: string, ap2: { reference: string, payee: { id: string } } }

/** One API call; anything but the expected status ends the walkthrough. */
async function call<T>(key: string, method: string, path: string, body?: unknown, expect = 200, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  if (res.status !== expect) fail(`${method} ${path}: expected ${expect}, got ${res.status} ${text}`)
  return JSON.parse(text) as T
}

const step = (text: string) => console.log(`\n== ${text}`)
const nowSeconds = () => Math.floor(Date.now() / 1000)
const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url')

/** An ES256 key pair. The private key is not extractable: it signs, and never leaves its holder. */
async function makeKey(kid: string): Promise<{ kid: string, publicJwk: JWK, privateKey: CryptoKey }> {
  const pair = await generateKeyPair('ES256')
  return { kid, publicJwk: { ...await exportJWK(pair.publicKey), kid }, privateKey: pair.privateKey }
}

/** An SD-JWT issuer for a key (WebCrypto's ECDSA signature is the raw r||s that JWS wants). */
function sdJwt(privateKey: CryptoKey): SDJwtInstance<SdJwtPayload> {
  const signer = async (data: string) => Buffer.from(await subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, privateKey, Buffer.from(data))).toString('base64url')
  return new SDJwtInstance({ signer, signAlg: 'ES256', hasher: digest, hashAlg: 'sha-256', saltGenerator: generateSalt })
}

const payee = { id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' }
const instrument = { id: 'pi_1', type: 'card', description: 'Card 4242' }

// (a) The issuer makes its key; the account trusts it. Mandates name it by `kid` in their JWT header.
step('a. issuer key, trusted by the account')
const issuer = await makeKey(`issuer-${randomUUID()}`)
const trusted = (await call<{ data: { id: string, kid: string } }>(SK, 'POST', '/trusted_keys', { role: 'trusted_agent_provider', description: 'walkthrough issuer', public_jwk: issuer.publicJwk }, 201)).data
console.log(`trusted key ${trusted.id} (kid ${trusted.kid})`)

// (b) The agent makes its own key pair and keeps the private half. The account registers the public
// half, which every closed mandate must be signed with, and gives the agent an ak_ key of its own.
step('b. agent with its own key pair and ak_ key')
const agentKey = await makeKey('agent')
const { kty, crv, x, y } = agentKey.publicJwk
const agent = (await call<{ data: { id: string } }>(SK, 'POST', '/agents', { name: 'Shopping assistant', public_jwk: { kty, crv, x, y } }, 201)).data
const AK = (await call<{ data: { key: string } }>(SK, 'POST', `/agents/${agent.id}/keys`, {}, 201)).data.key
console.log(`agent ${agent.id}, key ${AK.slice(0, 8)}…`)

// (c) The issuer signs the open Payment Mandate the user approved. Amounts are integer minor units
// (AP2 #339): 20000 is $200.00. cnf binds it to the agent's key. The mandate is a disclosed element
// of delegate_payload and each allowed payee and instrument a disclosure of its own, as in AP2's example.
step('c. open Payment Mandate → Wishpay mandate')
const openContent = {
  vct: 'mandate.payment.open.1',
  constraints: [
    { type: 'payment.amount_range', currency: 'USD', min: 100, max: 20000 },
    { type: 'payment.budget', currency: 'USD', max: 50000 },
    { type: 'payment.agent_recurrence', frequency: 'ON_DEMAND', max_occurrences: 10 },
    { type: 'payment.allowed_payees', allowed: [payee] },
    { type: 'payment.allowed_payment_instruments', allowed: [instrument] },
  ],
  cnf: { jwk: { kty, crv, x, y } },
  iat: nowSeconds(),
  exp: nowSeconds() + 3600,
}
// Which members are selectively disclosable: the mandate, and the entries of constraints 3 and 4's lists.
const openFrame = { delegate_payload: { _sd: [0], 0: { constraints: { 3: { allowed: { _sd: [0] } }, 4: { allowed: { _sd: [0] } } } } } }
const openToken = await sdJwt(issuer.privateKey).issue({ delegate_payload: [openContent] }, openFrame, { header: { typ: 'example+sd-jwt', kid: issuer.kid } }) // typ as in AP2's examples
const mandate = (await call<{ data: Mandate }>(SK, 'POST', '/mandates', { protocol: 'ap2', agent_id: agent.id, ap2: { open_payment_mandate: openToken } }, 201)).data
console.log(`mandate ${mandate.id}: ${mandate.currency} ${mandate.ap2.min_amount}..${mandate.max_amount} a payment, budget ${mandate.budget_amount}, ` +
  `${mandate.ap2.recurrence.frequency} up to ${mandate.ap2.recurrence.max_occurrences ?? '∞'} times, until ${mandate.expires_at}`)
console.log(`payees ${mandate.ap2.allowed_payees.map((p) => p.id).join(', ')}; instruments ${mandate.ap2.allowed_payment_instruments.map((i) => i.id).join(', ')}`)

// (d) From here on only the agent acts, with its ak_ key. A fresh nonce, bound into the closed mandate
// with the account's audience, makes the signature good for this one payment at this verifier.
step('d. agent pays with a closed Payment Mandate')
const nonce = (await call<{ data: { nonce: string, audience: string } }>(AK, 'POST', '/ap2/nonces', {}, 201)).data
const amount = 1999
const closedContent = {
  vct: 'mandate.payment.1',
  transaction_id: `checkout-${randomUUID()}`,
  payee,
  payment_amount: { amount, currency: 'USD' },
  payment_instrument: instrument,
}
const closedClaims = {
  delegate_payload: [closedContent],
  aud: nonce.audience,
  nonce: nonce.nonce,
  // Chains the closed mandate to the open one exactly as it was presented (disclosures included).
  sd_hash: sha256(openToken),
  iat: nowSeconds(),
}
const closedToken = await sdJwt(agentKey.privateKey).issue(closedClaims, { delegate_payload: { _sd: [0] } }, { header: { typ: 'kb+sd-jwt' } })
const payBody = { mandate_id: mandate.id, amount, currency: 'USD', ap2: { payment_mandate: closedToken } }
const payment = (await call<{ data: Payment }>(AK, 'POST', '/payments', payBody, 201, { 'idempotency-key': randomUUID() })).data
if (payment.status !== 'succeeded') fail(`payment ${payment.id} is ${payment.status}`)
console.log(`payment ${payment.id}: ${payment.status}, ${payment.amount} ${payment.currency} to ${payment.ap2.payee.id}, reference ${payment.ap2.reference}`)

// (e) A closed mandate pays once. A new Idempotency-Key makes this a new request, not a retry, so the
// mandate itself is refused (a retry under the first key would replay the first answer instead).
step('e. the same closed mandate again')
const replay = await call<{ error?: { code: string } }>(AK, 'POST', '/payments', payBody, 422, { 'idempotency-key': randomUUID() })
if (replay.error?.code !== 'mandate_replayed') fail(`expected mandate_replayed, got ${JSON.stringify(replay)}`)
console.log(`refused: 422 ${replay.error.code}`)

// (f) The receipt is a JWT signed by Wishpay; anyone can check it against the published JWKS.
step('f. receipt, verified against /.well-known/jwks.json')
const receipt = (await call<{ data: { receipt: string } }>(AK, 'GET', `/payments/${payment.id}/receipt`)).data
const jwksRes = await fetch(`${BASE}/.well-known/jwks.json`)
if (!jwksRes.ok) fail(`GET /.well-known/jwks.json: ${jwksRes.status}`)
const { payload, protectedHeader } = await jwtVerify(receipt.receipt, createLocalJWKSet(await jwksRes.json() as JSONWebKeySet), { issuer: 'urn:wishpay:psp', algorithms: ['ES256'] })
  .catch((error: unknown) => fail(`receipt does not verify: ${String(error)}`))
if (payload.payment_id !== payment.id || payload.reference !== payment.ap2.reference || payload.status !== 'Success') {
  fail(`receipt claims do not match the payment: ${JSON.stringify(payload)}`)
}
console.log(`receipt verified (ES256, kid ${protectedHeader.kid})`)
console.log(JSON.stringify(payload, null, 2))
console.log('\nAP2 walkthrough complete.')
