import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError, assertNotFound, assertPaymentError, ids } from '../helpers/assertions.js'
import { createMandate, getList } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'
import { pendingAnswer } from '../helpers/idempotency.js'
import { hold } from '../../src/modules/mandates/repository.js'

/**
 * What an agent key (ak_) may do, on every store (issue 14, item 1): pay with the mandates granted to
 * its agent (with an AP2 nonce where needed), read those mandates, their payments and receipts, and nothing else (403 insufficient_scope on every
 * other route of /openapi.json). A mandate of another agent, or of none, is as unknown to it as one
 * that does not exist, in the planner and in the database's conditional hold alike.
 */

/** The operations an agent key may call; every other authenticated operation is 403. */
const AGENT_OPERATIONS = new Set(['createPayment', 'listPayments', 'getPayment', 'getPaymentReceipt', 'listMandates', 'getMandate', 'createAp2Nonce'])

for (const kind of storeKinds()) {
  describe(`agent keys: scope and ownership (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    interface Agent { id: string, key: string }

    async function newAgent(a: TestAccount): Promise<Agent> {
      const created = await a.request('POST', '/agents', { name: 'assistant' })
      assert.equal(created.status, 201, created.raw)
      const key = await a.request('POST', `/agents/${created.body.data.id}/keys`, {})
      assert.equal(key.status, 201, key.raw)
      return { id: created.body.data.id, key: key.body.data.key }
    }

    const pay = (a: TestAccount, agent: Agent | null, mandateId: string, amount = 100) =>
      a.request('POST', '/payments', { mandate_id: mandateId, amount, idempotency_key: randomUUID() }, agent ? { key: agent.key } : {})

    async function amountUsed(mandateId: string): Promise<number> {
      const row = await t.store.db.kysely.selectFrom('mandates').select('amount_used').where('id', '=', mandateId).executeTakeFirstOrThrow()
      return Number(row.amount_used)
    }

    test('every route of /openapi.json but paying and reading payments and mandates is 403 insufficient_scope', async () => {
      const a = await t.account()
      const agent = await newAgent(a)
      const doc = (await t.inject({ method: 'GET', url: '/openapi.json' })).body
      let refused = 0
      let allowed = 0
      for (const [path, item] of Object.entries<any>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(item)) {
          if (!['get', 'post', 'put', 'delete', 'patch'].includes(method)) continue
          if ((op.security ?? doc.security).length === 0) continue
          const url = path.replace(/\{[^}]+\}/g, 'x_1')
          const res = await a.request(method.toUpperCase() as 'GET', url, method === 'get' ? undefined : {}, { key: agent.key })
          if (AGENT_OPERATIONS.has(op.operationId)) {
            assert.notEqual(res.status, 403, `${op.operationId}: ${res.raw}`)
            allowed++
          } else if (op.operationId === 'delegatePayment') {
            // ACP's route answers the same refusal as ACP's flat error (src/http/acp-errors.ts), under its version.
            assert.equal(res.status, 403, res.raw)
            assert.equal(res.body.error, undefined, 'no Wishpay envelope on an ACP route')
            assert.equal(res.body.code, 'insufficient_scope', res.raw)
            assert.equal(typeof res.body.type, 'string', res.raw)
            assert.match(res.body.message, /agent key/, op.operationId)
            assert.equal(res.headers['api-version'], '2026-04-17')
            refused++
          } else {
            assertError(res, 403, 'permission_error', 'insufficient_scope')
            assert.match(res.body.error.message, /agent key/, op.operationId)
            refused++
          }
        }
      }
      assert.equal(allowed, AGENT_OPERATIONS.size)
      assert.ok(refused >= 15, `only ${refused} routes refused`)
      // The routes the 403 guards do not move anything: the key cannot even create a wish or a mandate.
      assert.equal((await getList(a, '/wishes')).meta.total, 0)
      assert.equal((await getList(a, '/mandates')).meta.total, 0)
    })

    test('an agent key pays with its single_use and multi_use mandates (both executors); refused on another agent\'s and on an unassigned one', async () => {
      const a = await t.account()
      const mine = await newAgent(a)
      const theirs = await newAgent(a)
      for (const usage of ['single_use', 'multi_use']) {
        const own = await createMandate(t, a, { usage, budget_amount: 5000, agent_id: mine.id })
        const res = await pay(a, mine, own.id, 250)
        assert.equal(res.status, 201, res.raw)
        assert.equal(res.body.data.status, 'succeeded')
        assert.equal(res.body.data.mandate_id, own.id)
        assert.equal(await amountUsed(own.id), 250)
        if (usage === 'single_use') assert.equal((await a.request('GET', `/mandates/${own.id}`)).body.data.status, 'consumed')

        const another = await createMandate(t, a, { usage, budget_amount: 5000, agent_id: theirs.id })
        const unassigned = await createMandate(t, a, { usage, budget_amount: 5000 })
        for (const mandate of [another, unassigned]) {
          assertPaymentError(await pay(a, mine, mandate.id), 'mandate_not_found', 'mandate_id')
          assert.equal(await amountUsed(mandate.id), 0)
        }
        assertPaymentError(await pay(a, mine, 'mdt_unknown'), 'mandate_not_found', 'mandate_id')
        // The agent's own refusals are named as for any key.
        assertPaymentError(await pay(a, mine, own.id, 5001), usage === 'single_use' ? 'mandate_consumed' : 'amount_exceeds_mandate')
        // The account's secret key still pays with any of its mandates.
        assert.equal((await pay(a, null, another.id)).status, 201)
      }
    })

    test('the database refuses the hold of an agent on a mandate not granted to it', async () => {
      const a = await t.account()
      const mine = await newAgent(a)
      const theirs = await newAgent(a)
      const mandate = await createMandate(t, a, { usage: 'multi_use', budget_amount: 5000, agent_id: theirs.id })
      const now = t.clock.now().toISOString()
      const request = { accountId: a.id, mandateId: mandate.id, amount: 100, currency: 'USD', now }
      assert.equal(await hold(t.store.db.kysely, { ...request, agentId: mine.id }), undefined)
      assert.equal(await amountUsed(mandate.id), 0)
      assert.equal((await hold(t.store.db.kysely, { ...request, agentId: theirs.id }))?.amount_used, 100)
    })

    test('an agent key reads only its own mandates and their payments', async () => {
      const a = await t.account()
      const mine = await newAgent(a)
      const theirs = await newAgent(a)
      const own = await createMandate(t, a, { usage: 'multi_use', budget_amount: 5000, agent_id: mine.id })
      const another = await createMandate(t, a, { usage: 'multi_use', budget_amount: 5000, agent_id: theirs.id })
      const unassigned = await createMandate(t, a, { usage: 'multi_use', budget_amount: 5000 })
      const ownPayment = (await pay(a, mine, own.id)).body.data
      const theirPayment = (await pay(a, theirs, another.id)).body.data
      const accountPayment = (await pay(a, null, unassigned.id)).body.data
      const asMine = { key: mine.key }

      const mandates = await a.request('GET', '/mandates', undefined, asMine)
      assert.deepEqual(ids(mandates.body.data), [own.id])
      assert.equal(mandates.body.meta.total, 1)
      assert.equal((await a.request('GET', `/mandates?agent_id=${theirs.id}`, undefined, asMine)).body.meta.total, 0)
      assert.equal((await a.request('GET', `/mandates/${own.id}`, undefined, asMine)).status, 200)
      assertNotFound(await a.request('GET', `/mandates/${another.id}`, undefined, asMine))
      assertNotFound(await a.request('GET', `/mandates/${unassigned.id}`, undefined, asMine))

      const payments = await a.request('GET', '/payments', undefined, asMine)
      assert.deepEqual(ids(payments.body.data), [ownPayment.id])
      assert.equal(payments.body.meta.total, 1)
      assert.equal((await a.request('GET', `/payments?mandate_id=${another.id}`, undefined, asMine)).body.meta.total, 0)
      assert.equal((await a.request('GET', `/payments/${ownPayment.id}`, undefined, asMine)).status, 200)
      assertNotFound(await a.request('GET', `/payments/${theirPayment.id}`, undefined, asMine))
      assertNotFound(await a.request('GET', `/payments/${accountPayment.id}`, undefined, asMine))
      // Refunds of its own payment are the account's to make.
      assertError(await a.request('POST', `/payments/${ownPayment.id}/refunds`, { idempotency_key: randomUUID() }, asMine), 403, 'permission_error', 'insufficient_scope')

      // The account sees everything.
      assert.equal((await getList(a, '/payments')).meta.total, 3)
      assert.equal((await getList(a, '/mandates')).meta.total, 3)
    })

    test('an idempotency key the account used is not replayed to an agent', async () => {
      const a = await t.account()
      const agent = await newAgent(a)
      const mandate = await createMandate(t, a, { usage: 'multi_use', budget_amount: 5000, agent_id: agent.id })
      const body = { mandate_id: mandate.id, amount: 100, idempotency_key: randomUUID() }
      assert.equal((await a.request('POST', '/payments', body)).status, 201)
      assertError(await a.request('POST', '/payments', body, { key: agent.key }), 422, 'idempotency_error', 'idempotency_key_reused')
      const replay = await a.request('POST', '/payments', body)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      // Once the account's retries of these bytes replayed (src/http/retry-matches.ts remembers them), the
      // agent's same bytes are still another principal's request.
      assert.equal((await a.request('POST', '/payments', body)).headers['idempotent-replayed'], 'true')
      assertError(await a.request('POST', '/payments', body, { key: agent.key }), 422, 'idempotency_error', 'idempotency_key_reused')
    })

    test('50 concurrent agent payments on a multi_use mandate never exceed its budget', async () => {
      const a = await t.account()
      const agent = await newAgent(a)
      const mandate = await createMandate(t, a, { usage: 'multi_use', max_amount: 100, budget_amount: 1000, agent_id: agent.id })
      const results = await Promise.all(Array.from({ length: 50 }, () => pay(a, agent, mandate.id, 100)))
      const created = results.filter((r) => r.status === 201)
      const refused = results.filter((r) => r.status === 422)
      assert.equal(created.length, 10, results.filter((r) => r.status !== 201 && r.status !== 422).map((r) => r.raw).join('\n'))
      assert.equal(refused.length, 40)
      for (const r of refused) assert.equal(r.body.error.code, 'mandate_budget_exceeded')
      assert.equal(await amountUsed(mandate.id), 1000)
      assert.equal((await a.request('GET', '/payments', undefined, { key: agent.key })).body.meta.total, 10)
    })

    test('a disabled agent\'s key can no longer pay or read', async () => {
      const a = await t.account()
      const agent = await newAgent(a)
      const mandate = await createMandate(t, a, { usage: 'multi_use', budget_amount: 5000, agent_id: agent.id })
      assert.equal((await pay(a, agent, mandate.id)).status, 201)
      assert.equal((await a.request('POST', `/agents/${agent.id}/disable`, {})).status, 200)
      assertError(await pay(a, agent, mandate.id), 401, 'authentication_error', 'invalid_api_key')
      assertError(await a.request('GET', '/payments', undefined, { key: agent.key }), 401, 'authentication_error', 'invalid_api_key')
      assert.equal(await amountUsed(mandate.id), 100)
    })

    test('a key still cached after its agent is disabled pays nothing: the hold checks the agent (both executors)', async () => {
      const a = await t.account()
      const agent = await newAgent(a)
      const mandate = await createMandate(t, a, { usage: 'multi_use', budget_amount: 5000, agent_id: agent.id })
      // Disabled behind the key cache's back, as another process would.
      await t.store.db.kysely.updateTable('agents').set({ status: 'disabled' }).where('id', '=', agent.id).execute()
      const ctx = { accountId: a.id, requestId: 'req_test', agentId: agent.id }
      const input = { mandate_id: mandate.id, amount: 100, currency: 'USD', payment_method: 'card' }
      assert.equal(await t.services.payments.createInOneWrite(ctx, input, pendingAnswer(t, a, randomUUID())), undefined)
      await assert.rejects(t.services.payments.create(ctx, input), (e: any) => e.status === 401 && e.code === 'invalid_api_key')
      assert.equal(await amountUsed(mandate.id), 0)
    })
  })
}
