import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { OpenMandateRefusal, verifyOpenPaymentMandate } from '../../src/modules/ap2/open-mandate.js'
import { MAX_ACTIVE_TRUSTED_KEYS_PER_ACCOUNT } from '../../src/modules/trusted-keys/service.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError, assertInvalid, assertNotFound, ids, ISO_MS, newestFirst } from '../helpers/assertions.js'
import { issueMandate, makeKey, openMandate } from '../helpers/ap2-issuer.js'
import { eventsOf } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Trusted issuers (issue 14, item 2), on every store: the keys an account trusts to sign AP2 open
 * mandates. Create, list, get, revoke; the JWK rules (public members only, EC P-256, Ed25519, RSA of
 * 2048 bits or more, a kid unique in the account); and a revoked key no longer verifies a mandate.
 */

const TK_ID = /^tk_[0-9a-z]{26}$/
const KEYS = ['created_at', 'description', 'id', 'kid', 'public_jwk', 'revoked_at', 'role', 'status']

type Jwk = Record<string, unknown>
function ecJwk(kid: string): { pub: Jwk, priv: Jwk } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  return { pub: { ...publicKey.export({ format: 'jwk' }), kid }, priv: { ...privateKey.export({ format: 'jwk' }), kid } }
}
const edJwk = (kid: string): Jwk => ({ ...generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }), kid })
const rsaJwk = (kid: string, bits: number): Jwk => ({ ...generateKeyPairSync('rsa', { modulusLength: bits }).publicKey.export({ format: 'jwk' }), kid })

for (const kind of storeKinds()) {
  describe(`trusted keys (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    async function trust(a: TestAccount, publicJwk: Jwk, body: Record<string, unknown> = {}): Promise<any> {
      const res = await a.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: publicJwk, ...body })
      assert.equal(res.status, 201, res.raw)
      return res.body.data
    }

    test('POST /trusted_keys 201: the whole object, public members only; GET returns it; trusted_key.created is written', async () => {
      const a = await t.account()
      const { pub } = ecJwk('provider-1')
      const res = await a.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: { ...pub, alg: 'ES256', use: 'sig' }, description: 'Our agent provider' })
      assert.equal(res.status, 201, res.raw)
      const key = res.body.data
      assert.deepEqual(Object.keys(key).sort(), KEYS)
      assert.match(key.id, TK_ID)
      assert.match(key.created_at, ISO_MS)
      assert.deepEqual(key, {
        id: key.id, kid: 'provider-1', role: 'trusted_agent_provider', public_jwk: { kty: 'EC', kid: 'provider-1', crv: 'P-256', x: pub.x, y: pub.y, alg: 'ES256', use: 'sig' },
        status: 'active', description: 'Our agent provider', created_at: key.created_at, revoked_at: null,
      })
      const got = await a.request('GET', `/trusted_keys/${key.id}`)
      assert.equal(got.status, 200)
      assert.deepEqual(got.body.data, key)
      assert.deepEqual((await eventsOf(t, a.id, key.id)).map((e: any) => e.type), ['trusted_key.created'])

      const ed = await trust(a, edJwk('issuer-ed'), { role: 'user_credential_issuer' })
      assert.deepEqual([ed.role, ed.public_jwk.kty, ed.public_jwk.crv, ed.description], ['user_credential_issuer', 'OKP', 'Ed25519', null])
      const rsa = await trust(a, rsaJwk('issuer-rsa', 2048))
      assert.deepEqual(Object.keys(rsa.public_jwk).sort(), ['e', 'kid', 'kty', 'n'])
    })

    test('POST /trusted_keys 400 naming the member: private keys, small RSA, unknown kty or crv, off-curve points, alg that does not fit', async () => {
      const a = await t.account()
      const { pub, priv } = ecJwk('k')
      const cases: Array<[Jwk, string]> = [
        [priv, 'public_jwk.d'],
        [{ ...rsaJwk('k', 2048), p: 'AQAB' }, 'public_jwk.p'],
        [rsaJwk('k', 1024), 'public_jwk.n'],
        [{ kty: 'oct', kid: 'k' }, 'public_jwk.kty'],
        [{ ...pub, crv: 'P-384' }, 'public_jwk.crv'],
        [{ ...edJwk('k'), crv: 'X25519' }, 'public_jwk.crv'],
        [{ kty: 'EC', crv: 'P-256', kid: 'k', x: pub.x }, 'public_jwk.y'],
        [{ ...pub, y: ecJwk('other').pub.y }, 'public_jwk'],
        [{ ...pub, alg: 'EdDSA' }, 'public_jwk.alg'],
        [{ ...pub, x: 'not base64url!' }, 'public_jwk.x'],
      ]
      for (const [jwk, param] of cases) {
        const res = await a.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: jwk })
        assertInvalid(res, param)
      }
      const { kid: _kid, ...noKid } = pub
      assertInvalid(await a.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: noKid }), 'public_jwk.kid', 'parameter_missing')
      assertInvalid(await a.request('POST', '/trusted_keys', { role: 'verifier', public_jwk: pub }), 'role')
      assertInvalid(await a.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: { ...pub, colour: 'red' } }), 'public_jwk.colour', 'parameter_unknown')
      assert.equal((await a.request('GET', '/trusted_keys')).body.meta.total, 0, 'nothing was stored')
    })

    test('a kid names one key of an account for good: 409 kid_in_use, even once revoked; another account may use it', async () => {
      const a = await t.account()
      const first = await trust(a, ecJwk('shared-kid').pub)
      assertError(await a.request('POST', '/trusted_keys', { role: 'user_credential_issuer', public_jwk: ecJwk('shared-kid').pub }), 409, 'conflict_error', 'kid_in_use', 'public_jwk.kid')
      assert.equal((await a.request('POST', `/trusted_keys/${first.id}/revoke`, {})).status, 200)
      assertError(await a.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: ecJwk('shared-kid').pub }), 409, 'conflict_error', 'kid_in_use')
      const b = await t.account()
      await trust(b, ecJwk('shared-kid').pub)
    })

    test('POST /trusted_keys/:id/revoke: revoked with revoked_at, an event; twice is 409; another account\'s key is 404', async () => {
      const a = await t.account()
      const key = await trust(a, ecJwk('to-revoke').pub)
      const res = await a.request('POST', `/trusted_keys/${key.id}/revoke`, {})
      assert.equal(res.status, 200, res.raw)
      assert.equal(res.body.data.status, 'revoked')
      assert.match(res.body.data.revoked_at, ISO_MS)
      assert.deepEqual({ ...res.body.data, status: 'active', revoked_at: null }, key)
      assertError(await a.request('POST', `/trusted_keys/${key.id}/revoke`, {}), 409, 'conflict_error', 'invalid_state_transition')
      assert.deepEqual((await eventsOf(t, a.id, key.id)).map((e: any) => e.type).sort(), ['trusted_key.created', 'trusted_key.revoked'])
      const b = await t.account()
      assertNotFound(await b.request('GET', `/trusted_keys/${key.id}`))
      assertNotFound(await b.request('POST', `/trusted_keys/${key.id}/revoke`, {}))
      assertNotFound(await a.request('GET', '/trusted_keys/tk_01jf3v7k8m2n4p6q8r0s2t4v6w'))
    })

    test('GET /trusted_keys: newest first, filters by status and role, pages, only the account\'s own', async () => {
      const a = await t.account()
      const made = []
      for (let i = 0; i < 4; i++) made.push(await trust(a, ecJwk(`list-${i}`).pub, { role: i % 2 ? 'user_credential_issuer' : 'trusted_agent_provider' }))
      await a.request('POST', `/trusted_keys/${made[0].id}/revoke`, {})
      await trust(await t.account(), ecJwk('list-0').pub)
      const all = await a.request('GET', '/trusted_keys')
      assert.equal(all.status, 200)
      assert.deepEqual(ids(all.body.data), ids(newestFirst(made)))
      assert.equal(all.body.meta.total, 4)
      assert.deepEqual(ids((await a.request('GET', '/trusted_keys?status=active')).body.data), ids(newestFirst(made.slice(1))))
      assert.deepEqual(ids((await a.request('GET', '/trusted_keys?status=revoked')).body.data), [made[0].id])
      assert.deepEqual(ids((await a.request('GET', '/trusted_keys?role=user_credential_issuer')).body.data), ids(newestFirst([made[1], made[3]])))
      const page = await a.request('GET', '/trusted_keys?limit=2&offset=1')
      assert.deepEqual(ids(page.body.data), ids(newestFirst(made)).slice(1, 3))
      assert.deepEqual(page.body.meta, { total: 4, limit: 2, offset: 1, has_more: true })
      assertInvalid(await a.request('GET', '/trusted_keys?status=gone'), 'status')
    })

    test('at most 16 active keys per account, also when 24 creates race; a revoked key frees its place', async () => {
      const a = await t.account()
      const answers = await Promise.all(Array.from({ length: 24 }, (_, i) =>
        a.request('POST', '/trusted_keys', { role: 'acp_client', public_jwk: ecJwk(`race-${i}`).pub })))
      const created = answers.filter((res) => res.status === 201)
      assert.equal(created.length, MAX_ACTIVE_TRUSTED_KEYS_PER_ACCOUNT, answers.map((res) => res.status).join(' '))
      for (const res of answers.filter((r) => r.status !== 201)) assertError(res, 400, 'invalid_request_error', 'resource_limit_exceeded')
      const more = await a.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: ecJwk('one-more').pub })
      assertError(more, 400, 'invalid_request_error', 'resource_limit_exceeded')
      assert.match(more.body.error.message, /at most 16 active trusted keys/)
      const revoked = await a.request('POST', `/trusted_keys/${created[0]!.body.data.id}/revoke`, {})
      assert.equal(revoked.status, 200, revoked.raw)
      await trust(a, ecJwk('one-more').pub)
      // Another account is not affected by this one's keys.
      await trust(await t.account(), ecJwk('elsewhere').pub)
    })

    test('a read key (rk_) lists and reads but cannot trust or revoke (403)', async () => {
      const a = await t.account()
      const key = await trust(a, ecJwk('rk-test').pub)
      assert.equal((await a.request('GET', '/trusted_keys', undefined, { key: a.readKey })).status, 200)
      assert.equal((await a.request('GET', `/trusted_keys/${key.id}`, undefined, { key: a.readKey })).status, 200)
      assertError(await a.request('POST', '/trusted_keys', { role: 'trusted_agent_provider', public_jwk: ecJwk('x').pub }, { key: a.readKey }), 403, 'permission_error', 'insufficient_scope')
      assertError(await a.request('POST', `/trusted_keys/${key.id}/revoke`, {}, { key: a.readKey }), 403, 'permission_error', 'insufficient_scope')
    })

    test('a mandate signed by a trusted key verifies with the stored key; once the key is revoked it is issuer_untrusted', async () => {
      const a = await t.account()
      const issuer = await makeKey('provider-live')
      const agent = await makeKey('agent-live')
      const key = await trust(a, issuer.publicJwk)
      const now = t.clock.now()
      const token = await issueMandate(issuer, openMandate(agent.publicJwk, Math.floor(now.getTime() / 1000)))
      const verify = async () => verifyOpenPaymentMandate({ token, now, trustedKeys: await t.services.trustedKeys.issuerKey(a.id, 'provider-live') })
      const verified = await verify()
      assert.deepEqual(verified.issuer, { trusted_key_id: key.id, kid: 'provider-live', role: 'trusted_agent_provider' })
      assert.equal(verified.draft.max_amount, 20000)
      // Another account does not trust this issuer.
      const b = await t.account()
      await assert.rejects(verifyOpenPaymentMandate({ token, now, trustedKeys: await t.services.trustedKeys.issuerKey(b.id, 'provider-live') }),
        (err: unknown) => err instanceof OpenMandateRefusal && err.code === 'issuer_untrusted')
      assert.equal((await a.request('POST', `/trusted_keys/${key.id}/revoke`, {})).status, 200)
      await assert.rejects(verify(), (err: unknown) => err instanceof OpenMandateRefusal && err.code === 'issuer_untrusted' && /revoked/.test(err.message))
    })

    test('the service entry point: the account\'s key by kid, the app clock, refusals as the AppErrors a route answers', async () => {
      const a = await t.account()
      const issuer = await makeKey('provider-svc')
      const agent = await makeKey('agent-svc')
      const key = await trust(a, issuer.publicJwk, { role: 'user_credential_issuer' })
      const nowS = Math.floor(t.clock.now().getTime() / 1000)
      const token = await issueMandate(issuer, openMandate(agent.publicJwk, nowS))
      const verified = await t.services.trustedKeys.verifyOpenMandate(a.id, token)
      assert.deepEqual(verified.issuer, { trusted_key_id: key.id, kid: 'provider-svc', role: 'user_credential_issuer' })
      const refusedAs = (status: number, type: string, code: string, param?: string) => (err: any) => {
        assert.deepEqual([err.name, err.status, err.type, err.code, err.param], ['AppError', status, type, code, param])
        return true
      }
      await assert.rejects(t.services.trustedKeys.verifyOpenMandate(a.id, 'garbage'), refusedAs(400, 'invalid_request_error', 'mandate_malformed'))
      await assert.rejects(t.services.trustedKeys.verifyOpenMandate((await t.account()).id, token), refusedAs(422, 'payment_error', 'issuer_untrusted', 'kid'))
      const unknown = await issueMandate(issuer, openMandate(agent.publicJwk, nowS, { constraints: [{ type: 'payment.loyalty', points: 1 }] }))
      await assert.rejects(t.services.trustedKeys.verifyOpenMandate(a.id, unknown), refusedAs(422, 'payment_error', 'constraint_unsupported', 'payment.loyalty'))
      // The app's clock decides expiry.
      t.clock.advance(3600_000)
      await assert.rejects(t.services.trustedKeys.verifyOpenMandate(a.id, token), refusedAs(422, 'payment_error', 'mandate_expired', 'exp'))
    })
  })
}
