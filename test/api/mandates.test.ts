import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError, assertInvalid, assertNotFound, assertPaymentError, ids, ISO_MS, newestFirst, requestIdOf } from '../helpers/assertions.js'
import { countEvents, createMandate, createMandateRaw, createSucceededPayment, createWish, eventsOf, getList, getMandate, HOUR, inFuture } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Mandates through HTTP, on every store: contract section 6 (mandates), with the wish link of
 * section 4, the list rules of section 1, the errors of section 2 and the events of section 7.
 */

const MANDATE_ID = /^mdt_[0-9A-Za-z]{16,}$/

for (const kind of storeKinds()) {
  describe(`mandates (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    const createRaw = (a: TestAccount, body: Record<string, unknown>) => createMandateRaw(t, a, body)
    const create = (a: TestAccount, body: Record<string, unknown> = {}) => createMandate(t, a, body)
    const newWish = (a: TestAccount, body: Record<string, unknown> = {}) => createWish(a, { query: 'noise-cancelling headphones', ...body })
    const get = getMandate
    const list = (a: TestAccount, qs = '') => getList(a, `/mandates${qs}`)
    const pay = (a: TestAccount, mandateId: string, amount: number) => createSucceededPayment(a, mandateId, amount)

    async function setWishStatus(a: TestAccount, id: string, status: string): Promise<void> {
      const res = await a.request('PUT', `/wishes/${id}`, { status })
      assert.equal(res.status, 200, res.raw)
      assert.equal(res.body.data.status, status)
    }

    async function revoke(a: TestAccount, id: string): Promise<Response> {
      return a.request('POST', `/mandates/${id}/revoke`, {})
    }

    async function storedStatus(id: string): Promise<string> {
      const row = await t.store.db.kysely.selectFrom('mandates').select('status').where('id', '=', id).executeTakeFirstOrThrow()
      return row.status
    }

    // ---------------------------------------------------------------- create

    test('POST /mandates 201: full shape with the defaults', async () => {
      const a = await t.account()
      const before = t.clock.now().toISOString()
      const expiresAt = inFuture(t, HOUR)
      const res = await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 5000, expires_at: expiresAt })
      const afterIso = t.clock.now().toISOString()
      assert.equal(res.status, 201, res.raw)
      assertEnvelopeHeaders(res)
      assert.deepEqual(Object.keys(res.body), ['data'])
      const m = res.body.data
      assert.match(m.id, MANDATE_ID)
      assert.match(m.created_at, ISO_MS)
      assert.ok(m.created_at >= before && m.created_at <= afterIso, `${m.created_at} within [${before}, ${afterIso}]`)
      assert.deepEqual(m, {
        id: m.id,
        protocol: 'ap2',
        status: 'active',
        wish_id: null,
        agent_id: null,
        currency: 'USD',
        max_amount: 5000,
        budget_amount: 5000,
        amount_used: 0,
        usage: 'single_use',
        uses_count: 0,
        expires_at: expiresAt,
        not_before: null,
        metadata: {},
        created_at: m.created_at,
        updated_at: m.created_at,
        revoked_at: null,
        ap2: null,
      })
      assert.deepEqual(await get(a, m.id), m, 'what was stored is what was returned')
    })

    test('POST /mandates 201: every member given is kept, currency upper-cased, times normalised to UTC', async () => {
      const a = await t.account()
      const notBefore = inFuture(t, 60_000)
      const m = await create(a, {
        protocol: 'acp',
        max_amount: 1000,
        budget_amount: 3000,
        currency: 'eur',
        usage: 'multi_use',
        expires_at: '2099-01-01T12:00:00+02:00',
        not_before: notBefore,
        metadata: { agent: 'shopper-7' },
      })
      assert.deepEqual(m, {
        id: m.id,
        protocol: 'acp',
        status: 'active',
        wish_id: null,
        agent_id: null,
        currency: 'EUR',
        max_amount: 1000,
        budget_amount: 3000,
        amount_used: 0,
        usage: 'multi_use',
        uses_count: 0,
        expires_at: '2099-01-01T10:00:00.000Z',
        not_before: notBefore,
        metadata: { agent: 'shopper-7' },
        created_at: m.created_at,
        updated_at: m.created_at,
        revoked_at: null,
        ap2: null,
      })
      assert.deepEqual(await get(a, m.id), m)
      // The upper bound of an amount is 10^12 minor units.
      const big = await create(a, { max_amount: 1e12, budget_amount: 1e12 })
      assert.equal(big.max_amount, 1e12)
      assert.equal(big.budget_amount, 1e12)
      assert.equal((await create(a, { not_before: null })).not_before, null)
    })

    test('POST /mandates validation: each bad member is a 400 naming it, and nothing is created', async () => {
      const a = await t.account()
      const base = { protocol: 'ap2', max_amount: 5000, expires_at: inFuture(t, HOUR) }
      const without = (key: string) => Object.fromEntries(Object.entries(base).filter(([k]) => k !== key))
      const past = new Date(t.clock.now().getTime() - 1000).toISOString()
      const cases: Array<[string, unknown, string, string]> = [
        ['protocol missing', without('protocol'), 'protocol', 'parameter_missing'],
        ['protocol foo', { ...base, protocol: 'foo' }, 'protocol', 'parameter_invalid'],
        ['protocol auto (mandates take a concrete protocol)', { ...base, protocol: 'auto' }, 'protocol', 'parameter_invalid'],
        ['protocol upper-case', { ...base, protocol: 'AP2' }, 'protocol', 'parameter_invalid'],
        ['max_amount missing', without('max_amount'), 'max_amount', 'parameter_missing'],
        ['max_amount 0', { ...base, max_amount: 0 }, 'max_amount', 'parameter_invalid'],
        ['max_amount -1', { ...base, max_amount: -1 }, 'max_amount', 'parameter_invalid'],
        ['max_amount 1.5', { ...base, max_amount: 1.5 }, 'max_amount', 'parameter_invalid'],
        ['max_amount 10^12+1', { ...base, max_amount: 1e12 + 1 }, 'max_amount', 'parameter_invalid'],
        ['max_amount a string', { ...base, max_amount: '5000' }, 'max_amount', 'parameter_invalid'],
        ['budget_amount 0', { ...base, budget_amount: 0 }, 'budget_amount', 'parameter_invalid'],
        ['budget_amount 2.5', { ...base, budget_amount: 2.5 }, 'budget_amount', 'parameter_invalid'],
        ['budget_amount 10^12+1', { ...base, budget_amount: 1e12 + 1 }, 'budget_amount', 'parameter_invalid'],
        ['expires_at missing', without('expires_at'), 'expires_at', 'parameter_missing'],
        ['expires_at in the past', { ...base, expires_at: past }, 'expires_at', 'parameter_invalid'],
        ['expires_at long past', { ...base, expires_at: '2001-01-01T00:00:00.000Z' }, 'expires_at', 'parameter_invalid'],
        ['expires_at not a date', { ...base, expires_at: 'next tuesday' }, 'expires_at', 'parameter_invalid'],
        ['not_before after expires_at', { ...base, not_before: inFuture(t, 2 * HOUR) }, 'not_before', 'parameter_invalid'],
        ['not_before not a date', { ...base, not_before: 'soon' }, 'not_before', 'parameter_invalid'],
        ['currency XYZ', { ...base, currency: 'XYZ' }, 'currency', 'parameter_invalid'],
        ['currency not a code', { ...base, currency: 'dollars' }, 'currency', 'parameter_invalid'],
        ['usage twice', { ...base, usage: 'twice' }, 'usage', 'parameter_invalid'],
        ['metadata an array', { ...base, metadata: ['a'] }, 'metadata', 'parameter_invalid'],
        ['unknown member', { ...base, colour: 'red' }, 'colour', 'parameter_unknown'],
        ['status is not settable', { ...base, status: 'consumed' }, 'status', 'parameter_unknown'],
        ['amount_used is not settable', { ...base, amount_used: 1 }, 'amount_used', 'parameter_unknown'],
        ['uses_count is not settable', { ...base, uses_count: 1 }, 'uses_count', 'parameter_unknown'],
        ['id is not settable', { ...base, id: 'mdt_mine' }, 'id', 'parameter_unknown'],
      ]
      for (const [name, body, param, code] of cases) {
        const res = await a.request('POST', '/mandates', body)
        assert.doesNotThrow(() => assertInvalid(res, param, code), `${name}: ${res.raw}`)
      }
      assert.equal((await list(a)).meta.total, 0)
      assert.equal(await countEvents(t, a.id), 0)
    })

    test('POST /mandates with a read key: 403 insufficient_scope, nothing created', async () => {
      const a = await t.account()
      const res = await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 5000, expires_at: inFuture(t, HOUR) }, { key: a.readKey })
      assertError(res, 403, 'permission_error', 'insufficient_scope')
      assert.equal((await list(a)).meta.total, 0)
      const m = await create(a)
      assertError(await a.request('POST', `/mandates/${m.id}/revoke`, {}, { key: a.readKey }), 403, 'permission_error', 'insufficient_scope')
      assert.equal((await get(a, m.id)).status, 'active')
      const readGet = await a.request('GET', `/mandates/${m.id}`, undefined, { key: a.readKey })
      assert.equal(readGet.status, 200, readGet.raw)
      assert.deepEqual(readGet.body.data, m)
    })

    // ---------------------------------------------------------------- wish link

    test('POST /mandates with wish_id: the wish must exist in this account and be open (422 wish_not_usable)', async () => {
      const a = await t.account()
      const b = await t.account()
      assertPaymentError(await createRaw(a, { wish_id: 'wish_01aaaaaaaaaaaaaaaaaaaaaaaa' }), 'wish_not_usable', 'wish_id')
      const theirs = await newWish(b)
      assertPaymentError(await createRaw(a, { wish_id: theirs.id }), 'wish_not_usable', 'wish_id')
      for (const status of ['cancelled', 'fulfilled', 'expired']) {
        const w = await newWish(a)
        await setWishStatus(a, w.id, status)
        assertPaymentError(await createRaw(a, { wish_id: w.id }), 'wish_not_usable', 'wish_id')
      }
      assert.equal((await list(a)).meta.total, 0)

      // Open wishes (active, pending) are usable, and the mandate names its wish.
      const active = await newWish(a)
      const m1 = await create(a, { wish_id: active.id })
      assert.equal(m1.wish_id, active.id)
      assert.equal(m1.currency, 'USD')
      const pending = await newWish(a)
      await setWishStatus(a, pending.id, 'pending')
      assert.equal((await create(a, { wish_id: pending.id })).wish_id, pending.id)
      assert.equal((await list(a)).meta.total, 2)
    })

    test('POST /mandates with wish_id: a wish past its expires_at is not usable', async () => {
      const a = await t.account()
      const w = await newWish(a, { expires_at: inFuture(t, 1000) })
      // Before it lapses it is usable.
      assert.equal((await create(a, { wish_id: w.id })).wish_id, w.id)
      t.clock.advance(2000)
      assertPaymentError(await createRaw(a, { wish_id: w.id, expires_at: inFuture(t, HOUR) }), 'wish_not_usable', 'wish_id')
      assert.equal((await list(a)).meta.total, 1)
    })

    test('POST /mandates with wish_id: the protocol must be the wish\'s (422 protocol_mismatch)', async () => {
      const a = await t.account()
      const acp = await newWish(a, { protocol: 'acp' })
      assertPaymentError(await createRaw(a, { wish_id: acp.id, protocol: 'ap2' }), 'protocol_mismatch', 'protocol')
      assert.equal((await create(a, { wish_id: acp.id, protocol: 'acp' })).protocol, 'acp')
      const ap2 = await newWish(a) // auto resolves to ap2
      assertPaymentError(await createRaw(a, { wish_id: ap2.id, protocol: 'acp' }), 'protocol_mismatch', 'protocol')
      assert.equal((await create(a, { wish_id: ap2.id, protocol: 'ap2' })).protocol, 'ap2')
    })

    test('POST /mandates with wish_id: budget_amount may not exceed the wish\'s budget in minor units (USD 2, JPY 0, KWD 3)', async () => {
      const a = await t.account()
      const usd = await newWish(a, { budget: { max: 199.99, currency: 'USD' } })
      const okUsd = await create(a, { wish_id: usd.id, max_amount: 19999 })
      assert.equal(okUsd.budget_amount, 19999)
      assert.equal(okUsd.currency, 'USD')
      assert.equal((await create(a, { wish_id: usd.id, max_amount: 100, budget_amount: 19999, usage: 'multi_use' })).budget_amount, 19999)
      assertPaymentError(await createRaw(a, { wish_id: usd.id, max_amount: 20000 }), 'wish_budget_exceeded', 'budget_amount')
      assertPaymentError(await createRaw(a, { wish_id: usd.id, max_amount: 100, budget_amount: 20000 }), 'wish_budget_exceeded', 'budget_amount')

      const jpy = await newWish(a, { budget: { max: 500, currency: 'JPY' } })
      const okJpy = await create(a, { wish_id: jpy.id, max_amount: 500 })
      assert.equal(okJpy.budget_amount, 500)
      assert.equal(okJpy.currency, 'JPY', 'the wish\'s currency becomes the mandate\'s')
      assertPaymentError(await createRaw(a, { wish_id: jpy.id, max_amount: 501 }), 'wish_budget_exceeded', 'budget_amount')

      const kwd = await newWish(a, { budget: { max: 1.5, currency: 'kwd' } })
      const okKwd = await create(a, { wish_id: kwd.id, max_amount: 1500 })
      assert.equal(okKwd.budget_amount, 1500)
      assert.equal(okKwd.currency, 'KWD')
      assertPaymentError(await createRaw(a, { wish_id: kwd.id, max_amount: 1501 }), 'wish_budget_exceeded', 'budget_amount')

      const zero = await newWish(a, { budget: { max: 0 } })
      assertPaymentError(await createRaw(a, { wish_id: zero.id, max_amount: 1 }), 'wish_budget_exceeded', 'budget_amount')

      assert.equal((await list(a)).meta.total, 4)
    })

    test('POST /mandates with wish_id: the wish\'s budget currency is the mandate\'s (422 currency_mismatch otherwise)', async () => {
      const a = await t.account()
      const jpy = await newWish(a, { budget: { max: 500, currency: 'JPY' } })
      assertPaymentError(await createRaw(a, { wish_id: jpy.id, max_amount: 100, currency: 'USD' }), 'currency_mismatch', 'currency')
      assert.equal((await create(a, { wish_id: jpy.id, max_amount: 100, currency: 'jpy' })).currency, 'JPY', 'the same currency in any case is accepted')

      // A budget with a currency but no max fixes the currency and sets no cap.
      const eur = await newWish(a, { budget: { currency: 'EUR' } })
      const m = await create(a, { wish_id: eur.id, max_amount: 1e12 })
      assert.equal(m.currency, 'EUR')
      assertPaymentError(await createRaw(a, { wish_id: eur.id, currency: 'GBP' }), 'currency_mismatch', 'currency')

      // A wish without a budget leaves the currency to the mandate (default USD).
      const open = await newWish(a)
      assert.equal((await create(a, { wish_id: open.id, max_amount: 1e12 })).currency, 'USD')
      assert.equal((await create(a, { wish_id: open.id, currency: 'chf' })).currency, 'CHF')
      assert.equal((await list(a)).meta.total, 4)
    })

    // ---------------------------------------------------------------- read

    test('GET /mandates/:id 200 {data}; unknown id and another account\'s mandate 404', async () => {
      const a = await t.account()
      const b = await t.account()
      const m = await create(a)
      const res = await a.request('GET', `/mandates/${m.id}`)
      assert.equal(res.status, 200, res.raw)
      assertEnvelopeHeaders(res)
      assert.deepEqual(res.body, { data: m })
      assertNotFound(await b.request('GET', `/mandates/${m.id}`))
      assertNotFound(await a.request('GET', '/mandates/mdt_01aaaaaaaaaaaaaaaaaaaaaaaa'))
      assertNotFound(await a.request('GET', '/mandates/nope'))
      assert.deepEqual((await list(b)).meta.total, 0)
    })

    test('GET /mandates: meta, newest first, paging; filters status and wish_id; bad filters 400', async () => {
      const a = await t.account()
      const b = await t.account()
      await create(b)
      const wish = await newWish(a)
      const created: any[] = []
      for (let i = 0; i < 6; i++) {
        if (i % 2 === 0) t.clock.advance(1000)
        created.push(await create(a, i < 3 ? { wish_id: wish.id } : {}))
      }
      const all = await list(a)
      assert.deepEqual(all.meta, { total: 6, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(ids(all.data), ids(newestFirst(created)))
      assert.deepEqual(ids(all.data), ids([...created].reverse()))
      assert.deepEqual(all.data[0], await get(a, created[5].id), 'list items are full mandates')

      const page = await list(a, '?limit=2&offset=1')
      assert.deepEqual(page.meta, { total: 6, limit: 2, offset: 1, has_more: true })
      assert.deepEqual(ids(page.data), [created[4].id, created[3].id])

      const revoked = await revoke(a, created[1].id)
      assert.equal(revoked.status, 200, revoked.raw)
      await pay(a, created[4].id, 100) // single_use: consumed

      const active = await list(a, '?status=active')
      assert.deepEqual(active.meta, { total: 4, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(ids(active.data), [created[5].id, created[3].id, created[2].id, created[0].id])
      for (const m of active.data) assert.equal(m.status, 'active')
      assert.deepEqual(ids((await list(a, '?status=revoked')).data), [created[1].id])
      assert.deepEqual(ids((await list(a, '?status=consumed')).data), [created[4].id])
      assert.equal((await list(a, '?status=consumed')).data[0].status, 'consumed')
      assert.deepEqual((await list(a, '?status=expired')).meta.total, 0)

      const byWish = await list(a, `?wish_id=${wish.id}`)
      assert.deepEqual(byWish.meta, { total: 3, limit: 10, offset: 0, has_more: false })
      assert.deepEqual(ids(byWish.data), [created[2].id, created[1].id, created[0].id])
      assert.deepEqual(ids((await list(a, `?wish_id=${wish.id}&status=active`)).data), [created[2].id, created[0].id])
      assert.deepEqual(await list(a, '?wish_id=wish_01aaaaaaaaaaaaaaaaaaaaaaaa'), { data: [], meta: { total: 0, limit: 10, offset: 0, has_more: false } })

      assertInvalid(await a.request('GET', '/mandates?status=bogus'), 'status')
      assertInvalid(await a.request('GET', '/mandates?status=ACTIVE'), 'status')
      assertInvalid(await a.request('GET', '/mandates?limit=0'), 'limit')
      assertInvalid(await a.request('GET', '/mandates?limit=101'), 'limit')
      assertInvalid(await a.request('GET', '/mandates?offset=-1'), 'offset')
      assertInvalid(await a.request('GET', '/mandates?colour=red'), 'colour', 'parameter_unknown')
    })

    // ---------------------------------------------------------------- revoke

    test('POST /mandates/:id/revoke 200: revoked with revoked_at; again 409 invalid_state_transition', async () => {
      const a = await t.account()
      const b = await t.account()
      const m = await create(a, { usage: 'multi_use', budget_amount: 20000, metadata: { k: 'v' } })
      t.clock.advance(1000)
      const before = t.clock.now().toISOString()
      const res = await revoke(a, m.id)
      assert.equal(res.status, 200, res.raw)
      requestIdOf(res)
      const r = res.body.data
      assert.match(r.revoked_at, ISO_MS)
      assert.ok(r.revoked_at >= before, `${r.revoked_at} >= ${before}`)
      assert.deepEqual(r, { ...m, status: 'revoked', revoked_at: r.revoked_at, updated_at: r.revoked_at })
      assert.deepEqual(await get(a, m.id), r)

      const again = assertError(await revoke(a, m.id), 409, 'conflict_error', 'invalid_state_transition')
      assert.match(again.message, /revoked/)
      assert.deepEqual(await get(a, m.id), r, 'a refused revoke changes nothing')

      assertNotFound(await revoke(a, 'mdt_01aaaaaaaaaaaaaaaaaaaaaaaa'))
      const mine = await create(a)
      assertNotFound(await revoke(b, mine.id))
      assert.equal((await get(a, mine.id)).status, 'active', 'another account cannot revoke it')
    })

    test('POST /mandates/:id/revoke: a consumed or expired mandate is 409 invalid_state_transition', async () => {
      const a = await t.account()
      const consumed = await create(a)
      await pay(a, consumed.id, 1234)
      const c = await get(a, consumed.id)
      assert.equal(c.status, 'consumed')
      assert.equal(c.amount_used, 1234)
      assert.equal(c.uses_count, 1)
      assertError(await revoke(a, consumed.id), 409, 'conflict_error', 'invalid_state_transition')
      assert.deepEqual(await get(a, consumed.id), c)

      const expiring = await create(a, { expires_at: inFuture(t, 1000) })
      t.clock.advance(1500)
      assertError(await revoke(a, expiring.id), 409, 'conflict_error', 'invalid_state_transition')
      const e = await get(a, expiring.id)
      assert.equal(e.status, 'expired')
      assert.equal(e.revoked_at, null)
    })

    // ---------------------------------------------------------------- expiry

    test('a mandate past expires_at reads expired in GET and in list filters', async () => {
      const a = await t.account()
      const expiring = await create(a, { expires_at: inFuture(t, 1000) })
      const lasting = await create(a)
      assert.equal((await get(a, expiring.id)).status, 'active')
      t.clock.advance(1500)
      const read = await get(a, expiring.id)
      assert.deepEqual(read, { ...expiring, status: 'expired' })
      assert.deepEqual(ids((await list(a, '?status=expired')).data), [expiring.id])
      assert.deepEqual(ids((await list(a, '?status=active')).data), [lasting.id])
      const all = await list(a)
      assert.deepEqual(all.data.map((m: any) => m.status), ['active', 'expired'])
    })

    test('the expiry job stores expired and writes exactly one mandate.expired event', async () => {
      const a = await t.account()
      const expiring = await create(a, { expires_at: inFuture(t, 1000) })
      const lasting = await create(a)
      const revoked = await create(a, { expires_at: inFuture(t, 1000) })
      assert.equal((await revoke(a, revoked.id)).status, 200)
      t.clock.advance(2000)
      assert.equal(await storedStatus(expiring.id), 'active', 'not stored before the job runs')
      await t.jobs.runOnce()
      assert.equal(await storedStatus(expiring.id), 'expired')
      assert.equal(await storedStatus(lasting.id), 'active')
      assert.equal(await storedStatus(revoked.id), 'revoked', 'a revoked mandate stays revoked')

      const events = await eventsOf(t, a.id, expiring.id)
      assert.deepEqual(events.map((e) => e.type), ['mandate.created', 'mandate.expired'])
      const expiredEvent = events[1]!
      assert.equal(expiredEvent.request_id, null)
      assert.match(expiredEvent.id, /^evt_/)
      assert.equal(expiredEvent.data.object.id, expiring.id)
      assert.equal(expiredEvent.data.object.status, 'expired')
      const read = await get(a, expiring.id)
      assert.equal(read.status, 'expired')
      assert.deepEqual(expiredEvent.data.object, read)

      t.clock.advance(5000)
      await t.jobs.runOnce()
      assert.deepEqual((await eventsOf(t, a.id, expiring.id)).map((e) => e.type), ['mandate.created', 'mandate.expired'], 'a second pass writes none')
      assert.deepEqual((await eventsOf(t, a.id, revoked.id)).map((e) => e.type), ['mandate.created', 'mandate.revoked'])
      assert.deepEqual((await eventsOf(t, a.id, lasting.id)).map((e) => e.type), ['mandate.created'])
    })

    // ---------------------------------------------------------------- events

    test('events: mandate.created and mandate.revoked carry the object and the request id', async () => {
      const a = await t.account()
      const created = await createRaw(a, { max_amount: 700 })
      assert.equal(created.status, 201, created.raw)
      const m = created.body.data
      let events = await eventsOf(t, a.id, m.id)
      assert.equal(events.length, 1)
      assert.equal(events[0]!.type, 'mandate.created')
      assert.match(events[0]!.id, /^evt_/)
      assert.match(events[0]!.created_at, ISO_MS)
      assert.equal(events[0]!.request_id, requestIdOf(created))
      assert.deepEqual(events[0]!.data, { object: m })

      t.clock.advance(1000)
      const revoked = await revoke(a, m.id)
      assert.equal(revoked.status, 200, revoked.raw)
      events = await eventsOf(t, a.id, m.id)
      assert.deepEqual(events.map((e) => e.type), ['mandate.created', 'mandate.revoked'])
      assert.equal(events[1]!.request_id, requestIdOf(revoked))
      assert.deepEqual(events[1]!.data, { object: revoked.body.data })

      // Refused operations write nothing.
      assert.equal((await revoke(a, m.id)).status, 409)
      await createRaw(a, { max_amount: 0 })
      await createRaw(a, { wish_id: 'wish_01aaaaaaaaaaaaaaaaaaaaaaaa' })
      assert.equal(await countEvents(t, a.id), 2)
    })
  })
}
