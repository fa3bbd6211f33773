import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { sha256Base64Url } from '../../src/modules/ap2/open-mandate.js'
import type { TestAccount, TestApp } from './app.js'
import { closedMandate, issueClosedMandate, issueMandate, makeKey, openMandate, type TestKey } from './ap2-issuer.js'
import type { Response } from './response.js'

/**
 * An AP2 account as the issue's flow has it: an issuer the account trusts, an agent with its own key
 * pair and `ak_` key, and a mandate made from an open Payment Mandate the issuer signed for that agent.
 */
export interface Ap2Setup {
  a: TestAccount
  issuer: TestKey
  trustedKeyId: string
  agentKey: TestKey
  agent: { id: string, key: string }
  openToken: string
  mandate: any
}

/** Epoch seconds of the app's clock. */
export const nowSeconds = (t: TestApp): number => Math.floor(t.clock.now().getTime() / 1000)

/** Trusts a new issuer key, makes an agent, and a mandate from an open mandate with `overrides`. */
export async function ap2Setup(t: TestApp, overrides: Record<string, unknown> = {}, a?: TestAccount): Promise<Ap2Setup> {
  const account = a ?? await t.account()
  const issuer = await makeKey(`issuer-${randomUUID()}`)
  const trusted = await account.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: issuer.publicJwk })
  assert.equal(trusted.status, 201, trusted.raw)
  const agentKey = await makeKey('agent')
  const { kty, crv, x, y } = agentKey.publicJwk
  const created = await account.request('POST', '/agents', { name: 'shopper', public_jwk: { kty, crv, x, y } })
  assert.equal(created.status, 201, created.raw)
  const key = await account.request('POST', `/agents/${created.body.data.id}/keys`, {})
  assert.equal(key.status, 201, key.raw)
  const openToken = await issueMandate(issuer, openMandate(agentKey.publicJwk, nowSeconds(t), overrides))
  const made = await account.request('POST', '/mandates', { protocol: 'ap2', agent_id: created.body.data.id, ap2: { open_payment_mandate: openToken } })
  assert.equal(made.status, 201, made.raw)
  return { a: account, issuer, trustedKeyId: trusted.body.data.id, agentKey, agent: { id: created.body.data.id, key: key.body.data.key }, openToken, mandate: made.body.data }
}

/** A nonce for the agent (its ak_ key). */
export async function nonceFor(s: Ap2Setup): Promise<{ nonce: string, audience: string }> {
  const res = await s.a.request('POST', '/ap2/nonces', {}, { key: s.agent.key })
  assert.equal(res.status, 201, res.raw)
  return res.body.data
}

export interface ClosedOptions {
  amount?: number
  currency?: string
  content?: Record<string, unknown>
  nonce?: string
  aud?: string
  sdHash?: string
  iat?: number
  signer?: TestKey
}

/** A closed mandate for one payment of `amount`, with a fresh nonce unless one is given. */
export async function closedFor(t: TestApp, s: Ap2Setup, o: ClosedOptions = {}): Promise<string> {
  const issued = o.nonce === undefined || o.aud === undefined ? await nonceFor(s) : undefined
  const content = closedMandate({ payment_amount: { amount: o.amount ?? 1000, currency: o.currency ?? 'USD' }, ...o.content })
  return issueClosedMandate(o.signer ?? s.agentKey, content, {
    aud: o.aud ?? issued!.audience,
    nonce: o.nonce ?? issued!.nonce,
    sd_hash: o.sdHash ?? sha256Base64Url(s.openToken),
    iat: o.iat ?? nowSeconds(t),
  })
}

/** POST /payments with the agent's key and a closed mandate. */
export function payAp2(s: Ap2Setup, token: string | undefined, amount = 1000, extra: Record<string, unknown> = {}): Promise<Response> {
  return s.a.request('POST', '/payments', {
    mandate_id: s.mandate.id, amount, idempotency_key: randomUUID(), ...(token === undefined ? {} : { ap2: { payment_mandate: token } }), ...extra,
  }, { key: s.agent.key })
}

/** Open-mandate constraints for payments on demand: amounts 100..20000, a budget of `budget`, no recurrence window. */
export function onDemand(t: TestApp, budget = 50000, maxOccurrences?: number): Record<string, unknown> {
  return {
    constraints: [
      { type: 'payment.amount_range', currency: 'USD', max: 20000, min: 100 },
      { type: 'payment.budget', currency: 'USD', max: budget },
      { type: 'payment.agent_recurrence', frequency: 'ON_DEMAND', ...(maxOccurrences === undefined ? {} : { max_occurrences: maxOccurrences }) },
      { type: 'payment.allowed_payees', allowed: [{ id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' }] },
      { type: 'payment.allowed_payment_instruments', allowed: [{ id: 'pi_1', type: 'card', description: 'Card 4242' }] },
    ],
    exp: nowSeconds(t) + 3600,
  }
}
