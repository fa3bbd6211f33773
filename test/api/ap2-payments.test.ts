import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createLocalJWKSet, jwtVerify } from 'jose'
import { purgeLapsedNonces } from '../../src/modules/ap2/nonces.js'
import { sha256Base64Url } from '../../src/modules/ap2/open-mandate.js'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { ap2Setup, closedFor, nonceFor, nowSeconds, onDemand, payAp2 } from '../helpers/ap2.js'
import { issueMandate, makeKey, openMandate } from '../helpers/ap2-issuer.js'
import { assertError } from '../helpers/assertions.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * AP2 end to end over HTTP (issue 14, items 3-4): open Payment Mandates become mandates, and an agent
 * pays with closed Payment Mandates, each paying at most once, within every constraint, on both stores.
 */
for (const kind of storeKinds()) {
  describe(`AP2 mandates and payments (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    const mandateRow = (id: string) => t.store.db.kysely.selectFrom('mandates').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    const paymentCount = async (mandateId: string) => Number((await t.store.db.kysely.selectFrom('payments').select((eb) => eb.fn.countAll<number>().as('n')).where('mandate_id', '=', mandateId).executeTakeFirstOrThrow()).n)

    test('an open mandate becomes a mandate with its terms: caps, budget, uses, dates, lists, cnf', async () => {
      const s = await ap2Setup(t)
      const m = s.mandate
      assert.equal(m.protocol, 'ap2')
      assert.equal(m.agent_id, s.agent.id)
      assert.equal(m.currency, 'USD')
      assert.equal(m.max_amount, 20000)
      assert.equal(m.budget_amount, 50000)
      assert.equal(m.usage, 'multi_use')
      assert.equal(m.not_before, '2026-01-01T00:00:00.000Z')
      // The earlier of the token's exp (an hour) and execution_date.not_after.
      assert.ok(Date.parse(m.expires_at) <= t.clock.now().getTime() + 3600_000)
      assert.equal(m.ap2.open_mandate_hash, sha256Base64Url(s.openToken.split('~')[0]!))
      assert.equal(m.ap2.presentation_hash, sha256Base64Url(s.openToken))
      assert.deepEqual(m.ap2.issuer, { trusted_key_id: s.trustedKeyId, kid: s.issuer.kid, role: 'trusted_agent_provider' })
      assert.equal(m.ap2.min_amount, 100)
      assert.deepEqual(m.ap2.recurrence, { frequency: 'MONTHLY', max_occurrences: 12, window: 'P1M' })
      assert.deepEqual(m.ap2.allowed_payees.map((p: any) => p.id), ['merchant_1', 'merchant_2'])
      assert.deepEqual(m.ap2.allowed_payment_instruments, [{ id: 'pi_1', type: 'card', description: 'Card 4242' }])
      assert.equal(m.ap2.cnf_jwk.x, s.agentKey.publicJwk.x)
      assert.equal(m.ap2.last_payment_at, null)
      const read = await s.a.request('GET', `/mandates/${m.id}`)
      assert.deepEqual(read.body.data, m)
    })

    test('the same open mandate makes one mandate per account; other refusals of POST /mandates', async () => {
      const s = await ap2Setup(t)
      const again = await s.a.request('POST', '/mandates', { protocol: 'ap2', ap2: { open_payment_mandate: s.openToken } })
      assertError(again, 422, 'payment_error', 'mandate_replayed')
      // Terms come from the token only.
      const withTerms = await s.a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 100, ap2: { open_payment_mandate: s.openToken } })
      assertError(withTerms, 400, 'invalid_request_error', 'parameter_invalid')
      assert.equal(withTerms.body.error.param, 'max_amount')
      // An issuer the account does not trust.
      const stranger = await makeKey('stranger')
      const untrusted = await issueMandate(stranger, openMandate(s.agentKey.publicJwk, nowSeconds(t)))
      assertError(await s.a.request('POST', '/mandates', { protocol: 'ap2', ap2: { open_payment_mandate: untrusted } }), 422, 'payment_error', 'issuer_untrusted')
      // An agent registered with another key than the mandate's cnf.
      const other = await makeKey('other-agent')
      const foreignCnf = await issueMandate(s.issuer, openMandate(other.publicJwk, nowSeconds(t)))
      const refused = await s.a.request('POST', '/mandates', { protocol: 'ap2', agent_id: s.agent.id, ap2: { open_payment_mandate: foreignCnf } })
      assertError(refused, 422, 'payment_error', 'cnf_invalid')
      assert.equal(refused.body.error.param, 'agent_id')
      // Without ap2, max_amount and expires_at are required, in one answer.
      const plain = await s.a.request('POST', '/mandates', { protocol: 'ap2' })
      assertError(plain, 400, 'invalid_request_error', 'parameter_missing')
      assert.deepEqual(plain.body.error.errors.map((e: any) => e.param).sort(), ['expires_at', 'max_amount'])
      // 10 concurrent registrations of one new open mandate: one mandate.
      const fresh = await issueMandate(s.issuer, openMandate(s.agentKey.publicJwk, nowSeconds(t)))
      const answers = await Promise.all(Array.from({ length: 10 }, () => s.a.request('POST', '/mandates', { protocol: 'ap2', ap2: { open_payment_mandate: fresh } })))
      assert.deepEqual(answers.map((r) => r.status).sort(), [201, ...Array(9).fill(422)])
    })

    test('an agent pays with a closed mandate; the payment keeps its reference; the same closed mandate never pays again', async () => {
      const s = await ap2Setup(t, onDemand(t))
      const token = await closedFor(t, s, { amount: 1500 })
      const paid = await payAp2(s, token, 1500)
      assert.equal(paid.status, 201, paid.raw)
      const payment = paid.body.data
      assert.equal(payment.status, 'succeeded')
      assert.deepEqual(payment.ap2, {
        reference: sha256Base64Url(token),
        transaction_id: 'NivWhuqfzcvZNapvIEJ2-3tsdQLkiuIcye2g46WVgX8',
        payee: { id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' },
        payment_instrument: { id: 'pi_1', type: 'card', description: 'Card 4242' },
      })
      assert.deepEqual((await s.a.request('GET', `/payments/${payment.id}`, undefined, { key: s.agent.key })).body.data, payment)
      // Its receipt, signed by Wishpay's key, binds the closed mandate by its hash.
      const receipt = await s.a.request('GET', `/payments/${payment.id}/receipt`, undefined, { key: s.agent.key })
      assert.equal(receipt.status, 200, receipt.raw)
      const jwks = createLocalJWKSet((await t.inject({ method: 'GET', url: '/.well-known/jwks.json' })).body)
      const { payload } = await jwtVerify(receipt.body.data.receipt, jwks, { algorithms: ['ES256'] })
      assert.equal(payload.reference, payment.ap2.reference)
      assert.equal(payload.payment_id, payment.id)
      assert.equal(payload.status, 'Success')
      const replay = await payAp2(s, token, 1500)
      assertError(replay, 422, 'payment_error', 'mandate_replayed')
      // The open~~closed chain is the same closed mandate.
      assertError(await payAp2(s, `${s.openToken}~${token}`, 1500), 422, 'payment_error', 'mandate_replayed')
      // A retry under the first key replays the first answer.
      assert.equal(await paymentCount(s.mandate.id), 1)
      const row = await mandateRow(s.mandate.id)
      assert.equal(Number(row.amount_used), 1500)
      assert.equal(row.last_payment_at, payment.created_at)
    })

    test('every refusal of a closed mandate is named, and nothing is held', async () => {
      const s = await ap2Setup(t, onDemand(t))
      assertError(await payAp2(s, undefined), 422, 'payment_error', 'ap2_mandate_required')
      const { nonce, audience } = await nonceFor(s)
      const cases: Array<[string, Promise<string>, number, string?]> = [
        ['audience_invalid', closedFor(t, s, { nonce, aud: 'wishpay:acct_someone_else' }), 1000, 'aud'],
        ['mandate_chain_invalid', closedFor(t, s, { sdHash: sha256Base64Url('another open mandate') }), 1000, 'sd_hash'],
        ['mandate_signature_invalid', closedFor(t, s, { signer: await makeKey('thief') }), 1000],
        ['payment_amount_mismatch', closedFor(t, s, { amount: 999 }), 1000, 'amount'],
        ['constraint_unsatisfied', closedFor(t, s, { content: { payee: { id: 'merchant_9', name: 'Elsewhere' } } }), 1000, 'payment.allowed_payees'],
        ['constraint_unsatisfied', closedFor(t, s, { content: { payment_instrument: { id: 'pi_2', type: 'card' } } }), 1000, 'payment.allowed_payment_instruments'],
        ['constraint_unsatisfied', closedFor(t, s, { amount: 50 }), 50, 'payment.amount_range'],
        ['nonce_invalid', closedFor(t, s, { nonce: 'never-issued-nonce', aud: audience }), 1000, 'nonce'],
        ['mandate_expired', closedFor(t, s, { iat: nowSeconds(t) - 3600 }), 1000, 'iat'],
      ]
      for (const [code, token, amount, param] of cases) {
        const res = await payAp2(s, await token, amount)
        assertError(res, 422, 'payment_error', code)
        if (param) assert.equal(res.body.error.param, param, `${code}: ${res.raw}`)
      }
      // A tampered disclosure.
      const good = await closedFor(t, s)
      const [jwt, disclosure] = good.split('~')
      const forged = Buffer.from(Buffer.from(disclosure!, 'base64url').toString('utf8').replace('19900', '1000').replace(/"amount":\s*\d+/, '"amount": 1000'), 'utf8').toString('base64url')
      assertError(await payAp2(s, `${jwt}~${forged}~`), 422, 'payment_error', 'disclosure_invalid')
      // Garbage is a 400.
      assertError(await payAp2(s, 'not-a-token'), 400, 'invalid_request_error', 'mandate_malformed')
      // A plain mandate takes no closed mandate.
      const plain = await s.a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 1000, expires_at: '2099-01-01T00:00:00Z' })
      const onPlain = await s.a.request('POST', '/payments', { mandate_id: plain.body.data.id, amount: 100, idempotency_key: randomUUID(), ap2: { payment_mandate: good } })
      assertError(onPlain, 400, 'invalid_request_error', 'parameter_invalid')
      assert.equal(await paymentCount(s.mandate.id), 0)
      const row = await mandateRow(s.mandate.id)
      assert.deepEqual([Number(row.amount_used), Number(row.uses_count), row.last_payment_at], [0, 0, null])
    })

    test('a nonce pays once, lapses after 5 minutes, and serves only the agent that asked for it', async () => {
      const s = await ap2Setup(t, onDemand(t))
      const { nonce, audience } = await nonceFor(s)
      assert.equal((await payAp2(s, await closedFor(t, s, { nonce, aud: audience }))).status, 201)
      // Another closed mandate (another transaction) with the used nonce.
      const reused = await payAp2(s, await closedFor(t, s, { nonce, aud: audience, content: { transaction_id: 'another-checkout' } }))
      assertError(reused, 422, 'payment_error', 'nonce_invalid')
      assert.match(reused.body.error.message, /already been used/)
      const late = await nonceFor(s)
      const lateToken = await closedFor(t, s, { ...late, aud: late.audience })
      t.clock.advance(301_000)
      const lapsed = await payAp2(s, lateToken)
      assertError(lapsed, 422, 'payment_error', 'nonce_invalid')
      assert.match(lapsed.body.error.message, /lapsed/)
      // A nonce of another agent of the account.
      const other = await s.a.request('POST', '/agents', { name: 'other' })
      const otherKey = (await s.a.request('POST', `/agents/${other.body.data.id}/keys`, {})).body.data.key
      const foreign = (await s.a.request('POST', '/ap2/nonces', {}, { key: otherKey })).body.data
      assertError(await payAp2(s, await closedFor(t, s, { nonce: foreign.nonce, aud: foreign.audience })), 422, 'payment_error', 'nonce_invalid')
      // A day after they lapse, nonces are deleted (the periodic ap2-nonce-purge).
      const nonces = () => t.store.db.kysely.selectFrom('ap2_nonces').select('nonce').where('account_id', '=', s.a.id).execute()
      assert.ok((await nonces()).length >= 3)
      t.clock.advance(86_400_000 + 300_000)
      await purgeLapsedNonces(t.store.db, t.clock.now())
      assert.deepEqual(await nonces(), [])
    })

    test('revoking the issuer\'s trusted key stops payments on its mandates', async () => {
      const s = await ap2Setup(t, onDemand(t))
      const token = await closedFor(t, s)
      assert.equal((await s.a.request('POST', `/trusted_keys/${s.trustedKeyId}/revoke`, {})).status, 200)
      const res = await payAp2(s, token)
      assertError(res, 422, 'payment_error', 'issuer_untrusted')
      assert.equal(res.body.error.param, 'mandate_id')
    })

    test('30 concurrent payments with one closed mandate: exactly one pays', async () => {
      const s = await ap2Setup(t, onDemand(t))
      const token = await closedFor(t, s, { amount: 2000 })
      const answers = await Promise.all(Array.from({ length: 30 }, () => payAp2(s, token, 2000)))
      const statuses = answers.map((r) => r.status)
      assert.equal(statuses.filter((x) => x === 201).length, 1, JSON.stringify(answers.filter((r) => r.status !== 422).map((r) => r.raw)))
      for (const r of answers.filter((x) => x.status !== 201)) assertError(r, 422, 'payment_error', 'mandate_replayed')
      assert.equal(await paymentCount(s.mandate.id), 1)
      assert.equal(Number((await mandateRow(s.mandate.id)).amount_used), 2000)
    })

    test('150 concurrent closed mandates against a budget: exactly the budget is spent, and max_occurrences holds', async () => {
      const s = await ap2Setup(t, onDemand(t, 50000))
      const tokens = await Promise.all(Array.from({ length: 150 }, () => closedFor(t, s, { amount: 1000 })))
      const answers = await Promise.all(tokens.map((token) => payAp2(s, token, 1000)))
      assert.equal(answers.filter((r) => r.status === 201).length, 50)
      for (const r of answers.filter((x) => x.status !== 201)) assertError(r, 422, 'payment_error', 'mandate_budget_exceeded')
      const row = await mandateRow(s.mandate.id)
      assert.deepEqual([Number(row.amount_used), Number(row.uses_count)], [50000, 50])

      const capped = await ap2Setup(t, onDemand(t, 1_000_000, 7))
      const more = await Promise.all(Array.from({ length: 150 }, () => closedFor(t, capped, { amount: 1000 })))
      const paid = await Promise.all(more.map((token) => payAp2(capped, token, 1000)))
      assert.equal(paid.filter((r) => r.status === 201).length, 7)
      for (const r of paid.filter((x) => x.status !== 201)) {
        assertError(r, 422, 'payment_error', 'constraint_unsatisfied')
        assert.equal(r.body.error.param, 'payment.agent_recurrence')
      }
    })

    test('a recurrence window allows one payment per window, also under 150 concurrent payments; a declined one gives its place back', async () => {
      const horizon = nowSeconds(t) + 400 * 86400
      const s = await ap2Setup(t, {
        constraints: [
          { type: 'payment.amount_range', currency: 'USD', max: 20000, min: 100 },
          { type: 'payment.agent_recurrence', frequency: 'MONTHLY', max_occurrences: 2 },
        ],
        exp: horizon,
      })
      // A declined payment holds nothing and takes no place in the window.
      const declined = await payAp2(s, await closedFor(t, s), 1000, { payment_method: 'test_card_declined' })
      assert.equal(declined.body.data.status, 'failed')
      assert.equal((await mandateRow(s.mandate.id)).last_payment_at, null)

      const tokens = await Promise.all(Array.from({ length: 150 }, () => closedFor(t, s, { amount: 1000 })))
      const answers = await Promise.all(tokens.map((token) => payAp2(s, token, 1000)))
      assert.equal(answers.filter((r) => r.status === 201).length, 1)
      for (const r of answers.filter((x) => x.status !== 201)) {
        assertError(r, 422, 'payment_error', 'constraint_unsatisfied')
        assert.equal(r.body.error.param, 'payment.agent_recurrence')
      }
      // A month and a day later: the second and last occurrence.
      t.clock.advance(32 * 86400_000)
      assert.equal((await payAp2(s, await closedFor(t, s))).status, 201)
      t.clock.advance(32 * 86400_000)
      const third = await payAp2(s, await closedFor(t, s))
      assertError(third, 422, 'payment_error', 'constraint_unsatisfied')
      assert.match(third.body.error.message, /max_occurrences/)
    })
  })
}
