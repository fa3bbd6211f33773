import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertInvalid, assertPaymentError, requestIdOf } from '../helpers/assertions.js'
import { createMandate, createMandateRaw, createSucceededPayment, createWish, eventsOf, getMandate, HOUR, inFuture } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * A wish and its mandates (docs/decisions.md, "A mandate lives no longer than its wish"): creating a
 * mandate locks its wish; a wish that becomes final (PUT cancelled, fulfilled or expired, the expiry
 * sweep) or is deleted revokes its active mandates in the same transaction, each with its
 * mandate.revoked event, so every later payment is 422 mandate_revoked; no mandate outlives its
 * wish's expires_at, so a payment after the wish lapses is refused before the sweep runs too.
 */

const TERMINAL = ['cancelled', 'fulfilled', 'expired'] as const

for (const kind of storeKinds()) {
  describe(`a wish and its mandates (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    const newWish = (a: TestAccount, body: Record<string, unknown> = {}) => createWish(a, { query: 'a tent', ...body })
    const mandate = (a: TestAccount, body: Record<string, unknown> = {}) => createMandate(t, a, body)
    const pay = (a: TestAccount, mandateId: string, amount = 100): Promise<Response> =>
      a.request('POST', '/payments', { mandate_id: mandateId, amount, idempotency_key: randomUUID() })

    async function putWish(a: TestAccount, id: string, body: Record<string, unknown>): Promise<Response> {
      const res = await a.request('PUT', `/wishes/${id}`, body)
      assert.equal(res.status, 200, res.raw)
      return res
    }

    /** Where `other` starts in race(): before the request at `index`, or once `answered` have answered. */
    type Start = { index: number } | { answered: number }
    const STARTS: Start[] = [{ index: 0 }, { index: 8 }, { answered: 1 }, { answered: 3 }]
    const startedBefore = (start: Start) => ('answered' in start ? start.answered : 0)

    /**
     * Fires every request at once and `other` among them (see Start), so that it races those still in
     * flight. Returns the requests' answers and other's.
     */
    async function race(requests: (() => Promise<Response>)[], start: Start, other: () => Promise<Response>) {
      let answered = 0
      let fireOther!: () => void
      const fired = new Promise<void>((resolve) => { fireOther = resolve })
      let otherAnswer: Promise<Response> | undefined
      const pending = requests.map((request, i) => {
        if ('index' in start && start.index === i) otherAnswer = other()
        return request().finally(() => {
          if ('answered' in start && ++answered === start.answered) fireOther()
        })
      })
      otherAnswer ??= fired.then(other)
      const answers = await Promise.all(pending)
      return { answers, other: await otherAnswer }
    }

    async function eventTypes(a: TestAccount, id: string): Promise<string[]> {
      return (await eventsOf(t, a.id, id)).map((e) => e.type)
    }

    /** The mandate's mandate.revoked event: exactly one, carrying the mandate as GET shows it now. */
    async function assertRevokedWithEvent(a: TestAccount, id: string, requestId: string | null): Promise<any> {
      const read = await getMandate(a, id)
      assert.equal(read.status, 'revoked')
      assert.equal(read.revoked_at, read.updated_at)
      const events = (await eventsOf(t, a.id, id)).filter((e) => e.type === 'mandate.revoked')
      assert.equal(events.length, 1, `one mandate.revoked event for ${id}`)
      assert.deepEqual(events[0]!.data.object, read, 'the event carries the mandate as GET shows it, as the revoke route\'s does')
      assert.equal(events[0]!.request_id, requestId)
      return read
    }

    // ---------------------------------------------------------------- a wish that becomes final

    for (const status of TERMINAL) {
      test(`PUT status ${status}: the wish's active mandates are revoked with their events; payments on them are 422 mandate_revoked`, async () => {
        const a = await t.account()
        const wish = await newWish(a)
        const other = await newWish(a)
        const multi = await mandate(a, { wish_id: wish.id, usage: 'multi_use', budget_amount: 10_000 })
        const single = await mandate(a, { wish_id: wish.id })
        const alreadyRevoked = await mandate(a, { wish_id: wish.id })
        assert.equal((await a.request('POST', `/mandates/${alreadyRevoked.id}/revoke`, {})).status, 200)
        const consumed = await mandate(a, { wish_id: wish.id })
        await createSucceededPayment(a, consumed.id, 100)
        const ofOtherWish = await mandate(a, { wish_id: other.id })
        const wishless = await mandate(a)
        await createSucceededPayment(a, multi.id, 300)

        const res = await putWish(a, wish.id, { status })
        assert.equal(res.body.data.status, status)
        const requestId = requestIdOf(res)

        const revokedMulti = await assertRevokedWithEvent(a, multi.id, requestId)
        assert.equal(revokedMulti.amount_used, 300, 'what was paid stays paid')
        await assertRevokedWithEvent(a, single.id, requestId)
        assert.deepEqual(await eventTypes(a, alreadyRevoked.id), ['mandate.created', 'mandate.revoked'], 'a revoked mandate is not revoked twice')
        assert.equal((await getMandate(a, consumed.id)).status, 'consumed', 'a consumed mandate stays consumed')
        assert.equal((await getMandate(a, ofOtherWish.id)).status, 'active', 'another wish\'s mandate is untouched')
        assert.equal((await getMandate(a, wishless.id)).status, 'active')

        assertPaymentError(await pay(a, multi.id), 'mandate_revoked', 'mandate_id')
        assertPaymentError(await pay(a, single.id), 'mandate_revoked', 'mandate_id')
        assert.equal((await pay(a, ofOtherWish.id)).status, 201)

        // The wish's event comes first, then its mandates'; all in the one request.
        const all = await t.store.db.kysely.selectFrom('events').select(['type', 'object_id'])
          .where('account_id', '=', a.id).where('request_id', '=', requestId).orderBy('id').execute()
        assert.deepEqual(all.map((e) => e.type), ['wish.updated', 'mandate.revoked', 'mandate.revoked'])
        assert.deepEqual(all.slice(1).map((e) => e.object_id).sort(), [multi.id, single.id].sort())
      })
    }

    test('PUT that changes nothing about the status (pending, metadata) leaves the mandates active', async () => {
      const a = await t.account()
      const wish = await newWish(a)
      const m = await mandate(a, { wish_id: wish.id })
      await putWish(a, wish.id, { status: 'pending', metadata: { k: 'v' } })
      await putWish(a, wish.id, { status: 'active' })
      assert.equal((await getMandate(a, m.id)).status, 'active')
      assert.deepEqual(await eventTypes(a, m.id), ['mandate.created'])
      assert.equal((await pay(a, m.id)).status, 201)
    })

    test('DELETE /wishes/:id revokes its active mandates with their events; they stay readable, payments are 422 mandate_revoked', async () => {
      const a = await t.account()
      const wish = await newWish(a)
      const m = await mandate(a, { wish_id: wish.id, usage: 'multi_use', budget_amount: 1000 })
      const wishless = await mandate(a)
      const res = await a.request('DELETE', `/wishes/${wish.id}`)
      assert.equal(res.status, 204)
      const read = await assertRevokedWithEvent(a, m.id, requestIdOf(res))
      assert.equal(read.wish_id, wish.id, 'the mandate still names the wish it was for')
      assertPaymentError(await pay(a, m.id), 'mandate_revoked', 'mandate_id')
      assert.equal((await getMandate(a, wishless.id)).status, 'active')
      const types = await t.store.db.kysely.selectFrom('events').select('type')
        .where('account_id', '=', a.id).where('request_id', '=', requestIdOf(res)).orderBy('id').execute()
      assert.deepEqual(types.map((e) => e.type), ['wish.deleted', 'mandate.revoked'])
    })

    // ---------------------------------------------------------------- expiry

    test('a mandate never outlives its wish: expires_at is capped at the wish\'s; not_before must come before it', async () => {
      const a = await t.account()
      const wishExpiry = inFuture(t, HOUR)
      const wish = await newWish(a, { expires_at: wishExpiry })
      const capped = await mandate(a, { wish_id: wish.id, expires_at: inFuture(t, 2 * HOUR) })
      assert.equal(capped.expires_at, wishExpiry)
      assert.deepEqual(await getMandate(a, capped.id), capped)
      const earlierExpiry = inFuture(t, HOUR / 2)
      assert.equal((await mandate(a, { wish_id: wish.id, expires_at: earlierExpiry })).expires_at, earlierExpiry, 'an earlier deadline is kept')
      const open = await newWish(a)
      const late = inFuture(t, 3 * HOUR)
      assert.equal((await mandate(a, { wish_id: open.id, expires_at: late })).expires_at, late, 'a wish without expires_at caps nothing')

      const res = await createMandateRaw(t, a, { wish_id: wish.id, not_before: inFuture(t, 1.5 * HOUR), expires_at: inFuture(t, 2 * HOUR) })
      assertInvalid(res, 'not_before')
      assert.match(res.body.error.message, /wish's expires_at/)
    })

    test('PUT expires_at earlier caps the wish\'s active mandates; later or null leaves them', async () => {
      const a = await t.account()
      const wish = await newWish(a)
      const m = await mandate(a, { wish_id: wish.id, expires_at: inFuture(t, 2 * HOUR) })
      const short = await mandate(a, { wish_id: wish.id, expires_at: inFuture(t, HOUR / 4) })
      const wishless = await mandate(a, { expires_at: inFuture(t, 2 * HOUR) })
      const cap = inFuture(t, HOUR)
      await putWish(a, wish.id, { expires_at: cap })
      const read = await getMandate(a, m.id)
      assert.equal(read.expires_at, cap)
      assert.equal(read.status, 'active')
      assert.deepEqual(await getMandate(a, short.id), short, 'a mandate ending sooner is untouched')
      assert.deepEqual(await getMandate(a, wishless.id), wishless)

      await putWish(a, wish.id, { expires_at: inFuture(t, 5 * HOUR) })
      assert.equal((await getMandate(a, m.id)).expires_at, cap, 'extending the wish does not extend its mandates')
      await putWish(a, wish.id, { expires_at: null })
      assert.equal((await getMandate(a, m.id)).expires_at, cap)
    })

    test('a payment after the wish lapses, before the sweep runs, is 422 mandate_expired; the sweep then expires the mandate', async () => {
      const a = await t.account()
      const wish = await newWish(a, { expires_at: inFuture(t, 1000) })
      const m = await mandate(a, { wish_id: wish.id, usage: 'multi_use', budget_amount: 1000, expires_at: inFuture(t, HOUR) })
      assert.equal((await pay(a, m.id)).status, 201)
      t.clock.advance(2000)
      const stored = await t.store.db.kysely.selectFrom('wishes').select('status').where('id', '=', wish.id).executeTakeFirstOrThrow()
      assert.equal(stored.status, 'active', 'the sweep has not run yet')
      assertPaymentError(await pay(a, m.id), 'mandate_expired', 'mandate_id')
      assert.equal((await getMandate(a, m.id)).status, 'expired')

      await t.jobs.runOnce()
      assert.deepEqual(await eventTypes(a, m.id), ['mandate.created', 'mandate.expired'], 'it lapsed with its wish: expired, not revoked')
      assertPaymentError(await pay(a, m.id), 'mandate_expired', 'mandate_id')
    })

    test('the expiry sweep revokes, with its event, a mandate that outlived its lapsed wish (data from before the cap)', async () => {
      const a = await t.account()
      const wish = await newWish(a, { expires_at: inFuture(t, 1000) })
      const m = await mandate(a, { wish_id: wish.id, usage: 'multi_use', budget_amount: 1000 })
      const later = inFuture(t, 2 * HOUR)
      await t.store.db.kysely.updateTable('mandates').set({ expires_at: later }).where('id', '=', m.id).execute()
      t.clock.advance(2000)
      await t.jobs.runOnce()
      assert.equal((await a.request('GET', `/wishes/${wish.id}`)).body.data.status, 'expired')
      const read = await assertRevokedWithEvent(a, m.id, null)
      assert.equal(read.expires_at, later)
      assertPaymentError(await pay(a, m.id), 'mandate_revoked', 'mandate_id')
      await t.jobs.runOnce()
      assert.deepEqual(await eventTypes(a, m.id), ['mandate.created', 'mandate.revoked'], 'a second pass writes nothing')
    })

    // ---------------------------------------------------------------- concurrency

    test('30 payments racing a cancel: each succeeded before the revoke or is 422 mandate_revoked; the sum stays within budget', async () => {
      const a = await t.account()
      const budget = 2500
      for (const start of STARTS) {
        const wish = await newWish(a, { budget: { max: 25 } })
        const m = await mandate(a, { wish_id: wish.id, usage: 'multi_use', max_amount: 100, budget_amount: budget })
        const { answers: payments, other: cancelled } = await race(Array.from({ length: 30 }, () => () => pay(a, m.id, 100)), start,
          () => a.request('PUT', `/wishes/${wish.id}`, { status: 'cancelled' }))
        assert.equal(cancelled.status, 200, cancelled.raw)
        let sum = 0
        for (const res of payments) {
          if (res.status === 201) {
            assert.equal(res.body.data.status, 'succeeded', res.raw)
            sum += res.body.data.amount
          } else {
            assert.equal(res.status, 422, res.raw)
            assert.ok(['mandate_revoked', 'mandate_budget_exceeded'].includes(res.body.error.code), res.raw)
          }
        }
        assert.ok(sum >= startedBefore(start) * 100, 'the payments that answered before the cancel began succeeded')
        assert.ok(sum <= budget, `${sum} <= ${budget}`)
        const read = await assertRevokedWithEvent(a, m.id, requestIdOf(cancelled))
        // The revoke saw every payment that succeeded: none was taken from the mandate after it.
        assert.equal(read.amount_used, sum)
        const listed = await a.request('GET', `/payments?mandate_id=${m.id}&status=succeeded&limit=100`)
        assert.equal(listed.body.meta.total, payments.filter((r) => r.status === 201).length)
        assertPaymentError(await pay(a, m.id), 'mandate_revoked', 'mandate_id')
      }
    })

    for (const end of ['cancel', 'delete'] as const) {
      test(`20 mandate creates racing a ${end} of their wish: none is left active on it`, async () => {
        const a = await t.account()
        for (const start of STARTS) {
          const wish = await newWish(a)
          const { answers, other: ended } = await race(Array.from({ length: 20 }, () => () => createMandateRaw(t, a, { wish_id: wish.id })), start,
            () => (end === 'cancel' ? a.request('PUT', `/wishes/${wish.id}`, { status: 'cancelled' }) : a.request('DELETE', `/wishes/${wish.id}`)))
          assert.equal(ended.status, end === 'cancel' ? 200 : 204, ended.raw)
          const created = answers.filter((r) => r.status === 201).map((r) => r.body.data)
          assert.ok(created.length >= startedBefore(start), 'those that answered before the wish ended were made')
          for (const res of answers) {
            if (res.status !== 201) assertPaymentError(res, 'wish_not_usable', 'wish_id')
          }
          // A mandate made before the wish ended was revoked by it; none could be made after.
          for (const m of created) await assertRevokedWithEvent(a, m.id, requestIdOf(ended))
          const active = await t.store.db.kysely.selectFrom('mandates').select('id')
            .where('wish_id', '=', wish.id).where('status', '=', 'active').execute()
          assert.deepEqual(active, [])
        }
      })
    }

    test('20 mandate creates racing a budget cut: each was checked against the wish as last committed', async () => {
      const a = await t.account()
      // A clock that never returns the same instant twice: timestamps read under the wish's lock then
      // tell which of two requests held it first.
      const clock = t.clock
      const realNow = clock.now.bind(clock)
      let last = 0
      clock.now = () => {
        last = Math.max(realNow().getTime(), last + 1)
        return new Date(last)
      }
      try {
        for (const start of STARTS) {
          const wish = await newWish(a, { budget: { max: 100 } })
          // Most ask for more than the cut leaves; every fourth fits either budget.
          const { answers, other: cutRes } = await race(
            Array.from({ length: 20 }, (_, i) => () => createMandateRaw(t, a, { wish_id: wish.id, max_amount: i % 4 === 0 ? 4000 : 8000 })), start,
            () => a.request('PUT', `/wishes/${wish.id}`, { budget: { max: 40 } }))
          assert.equal(cutRes.status, 200, cutRes.raw)
          const cutAt = cutRes.body.data.updated_at
          for (const res of answers) {
            if (res.status === 201) {
              const m = res.body.data
              // Made after the cut committed, it fits the cut budget; an 8000 one was made before it.
              if (m.created_at > cutAt) assert.ok(m.budget_amount <= 4000, `${m.id} created ${m.created_at} after the cut at ${cutAt}`)
              else assert.ok(m.created_at < cutAt)
            } else {
              assertPaymentError(res, 'wish_budget_exceeded', 'budget_amount')
              assert.match(res.body.error.message, /budget of 40 USD/, 'refused against the committed cut, never another state')
            }
          }
          const fitting = answers.filter((r) => r.body?.data?.max_amount === 4000)
          assert.equal(fitting.length, 5, 'a mandate within both budgets is never refused')
        }
      } finally {
        clock.now = realNow
      }
    })
  })
}
