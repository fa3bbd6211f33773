import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createAccountService, KEY_CACHE_TTL_MS } from '../../src/modules/accounts/service.js'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { assertError } from '../helpers/assertions.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * The authenticated-key cache (modules/accounts/service.ts): a hit is answered synchronously from the
 * cache; a key whose entry lapsed is looked up once however many requests carry it (single flight), and
 * one in steady use is refreshed before it lapses; a revocation through this process is honoured at once,
 * one made elsewhere within KEY_CACHE_TTL_MS. Lookups are counted by the service's own keyLookups(); time
 * moves by the app's test clock, never by sleeping.
 */

const CONCURRENT = 64

for (const kind of storeKinds()) {
  describe(`key cache (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    test('a cache hit answers synchronously with the principal already held', async () => {
      const a = await t.account()
      assert.equal((await a.request('GET', '/wishes')).status, 200)
      const first = t.services.accounts.authenticate(a.key)
      const second = t.services.accounts.authenticate(a.key)
      assert.ok(!(first instanceof Promise), 'a hit is not a promise')
      assert.equal(first?.keyId, a.keyId)
      assert.equal(second, first, 'the same principal object, not a new one per hit')
    })

    test(`${CONCURRENT} concurrent requests of one key after its entry lapsed make one database lookup`, async () => {
      const a = await t.account()
      assert.equal((await a.request('GET', '/wishes')).status, 200)
      t.clock.advance(KEY_CACHE_TTL_MS + 1)
      const before = t.services.accounts.keyLookups()
      const answers = await Promise.all(Array.from({ length: CONCURRENT }, () => a.request('GET', '/wishes')))
      assert.deepEqual(answers.map((res) => res.status), answers.map(() => 200))
      assert.equal(t.services.accounts.keyLookups() - before, 1)
    })

    test('a key in use is refreshed ahead of its expiry, by one lookup, while its requests are served', async () => {
      const a = await t.account()
      assert.equal((await a.request('GET', '/wishes')).status, 200)
      // Past the latest refresh point (half the TTL plus up to a quarter of jitter), before expiry.
      t.clock.advance(KEY_CACHE_TTL_MS * 0.8)
      const before = t.services.accounts.keyLookups()
      const answers = await Promise.all(Array.from({ length: CONCURRENT }, () => a.request('GET', '/wishes')))
      assert.deepEqual(answers.map((res) => res.status), answers.map(() => 200))
      assert.equal(t.services.accounts.keyLookups() - before, 1)
    })

    test('a revocation through this process is honoured at once, even with a lookup of the key in flight', async () => {
      const a = await t.account()
      const b = await t.account()
      assert.equal((await a.request('GET', '/wishes')).status, 200)
      assert.equal((await b.request('GET', '/wishes')).status, 200)
      t.clock.advance(KEY_CACHE_TTL_MS + 1)
      // Requests that arrived before the revocation may be served; none after it.
      const inFlight = Array.from({ length: 8 }, () => a.request('GET', '/wishes'))
      assert.equal(await t.services.accounts.revokeKey(a.keyId), 'revoked')
      for (const res of await Promise.all(inFlight)) assert.ok(res.status === 200 || res.status === 401, `status ${res.status}`)
      assertError(await a.request('GET', '/wishes'), 401, 'authentication_error', 'invalid_api_key')
      assertError(await a.request('GET', '/wishes'), 401, 'authentication_error', 'invalid_api_key')
      assert.equal((await b.request('GET', '/wishes')).status, 200, 'other keys still work')
    })

    test('a revocation made elsewhere is honoured once KEY_CACHE_TTL_MS has passed', async () => {
      const a = await t.account()
      assert.equal((await a.request('GET', '/wishes')).status, 200)
      const elsewhere = createAccountService({ db: t.store.db, clock: t.clock })
      assert.equal(await elsewhere.revokeKey(a.keyId), 'revoked')
      t.clock.advance(KEY_CACHE_TTL_MS)
      assertError(await a.request('GET', '/wishes'), 401, 'authentication_error', 'invalid_api_key')
    })

    test('a known key is looked up once, then hit; an unknown key is never cached', async () => {
      const a = await t.account()
      const before = t.services.accounts.keyLookups()
      assert.equal((await a.request('GET', '/wishes')).status, 200)
      assert.equal((await a.request('GET', '/wishes')).status, 200)
      assert.equal(t.services.accounts.keyLookups() - before, 1, 'one lookup, then hits')
      // An unknown key is never cached (random guesses must not fill the cache): each one is a lookup.
      const unknown = `sk_${'x'.repeat(40)}`
      const seen = t.services.accounts.keyLookups()
      await a.request('GET', '/wishes', undefined, { key: unknown })
      await a.request('GET', '/wishes', undefined, { key: unknown })
      assert.equal(t.services.accounts.keyLookups() - seen, 2)
    })
  })
}
