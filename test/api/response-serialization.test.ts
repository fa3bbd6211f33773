import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { Type } from '@sinclair/typebox'
import Fastify, { type FastifyInstance } from 'fastify'
import { errors } from '../../src/lib/errors.js'
import { registerErrorHandling } from '../../src/http/error-handler.js'
import { registerIdempotency } from '../../src/http/idempotency.js'
import { ERROR_SCHEMAS, ErrorResponse, errorResponses } from '../../src/http/schemas.js'
import { type Response, startTestApp, type TestAccount, type TestApp, toResponse } from '../helpers/app.js'
import { createMandate, HOUR, inFuture } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Every answer is serialized by its route's response schema, idempotent writes included: what a POST
 * answers (and what its idempotency record replays) holds exactly the members the schema declares,
 * byte for byte as a GET of the same object.
 */

/** The raw JSON of `data` in a `{"data":...}` answer, as sent. */
function rawData(res: Response): string {
  assert.ok(res.raw.startsWith('{"data":') && res.raw.endsWith('}'), res.raw)
  return res.raw.slice('{"data":'.length, -1)
}

function schemaProperties(doc: any, name: string): string[] {
  return Object.keys(doc.components.schemas[name].properties).sort()
}

/** Every member is one the schema declares, and every member it requires is there (optional ones, such as a wish's agent_id, only when set). */
function assertSchemaMembers(doc: any, data: Record<string, unknown>, name: string, where: string): void {
  const declared = new Set(schemaProperties(doc, name))
  const members = Object.keys(data)
  assert.deepEqual(members.filter((m) => !declared.has(m)), [], `${where}: members outside ${name}`)
  const required: string[] = doc.components.schemas[name].required ?? []
  assert.deepEqual(required.filter((m) => !members.includes(m)), [], `${where}: required members of ${name} missing`)
}

for (const kind of storeKinds()) {
  describe(`response serialization (${kind.name})`, () => {
    let t: TestApp
    let doc: any
    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' })
      doc = (await t.inject({ method: 'GET', url: '/openapi.json' })).body
    })
    after(async () => { await t.close() })

    /** POSTs `body` twice (with an idempotency key: first answer and replay) and once without a key. */
    async function created(a: TestAccount, url: string, body: Record<string, unknown>, schema: string): Promise<Response[]> {
      const key = randomUUID()
      const first = await a.request('POST', url, body, { headers: { 'idempotency-key': key } })
      assert.equal(first.status, 201, first.raw)
      const replay = await a.request('POST', url, body, { headers: { 'idempotency-key': key } })
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      assert.equal(replay.raw, first.raw)
      const answers = [first]
      if (!url.startsWith('/payments')) {
        // Payment operations always take a key; the others also answer without one.
        const plain = await a.request('POST', url, body)
        assert.equal(plain.status, 201, plain.raw)
        answers.push(plain)
      }
      for (const res of answers) assertSchemaMembers(doc, res.body.data, schema, url)
      return answers
    }

    test('wishes: POST answers hold the schema\'s members, byte for byte as GET', async () => {
      const a = await t.account()
      for (const res of await created(a, '/wishes', { query: 'A lamp', budget: { max: 19.5 }, metadata: { k: 'v' } }, 'Wish')) {
        const got = await a.request('GET', `/wishes/${res.body.data.id}`)
        assert.equal(rawData(got), rawData(res))
      }
    })

    test('mandates: create and revoke answer byte for byte as GET', async () => {
      const a = await t.account()
      for (const res of await created(a, '/mandates', { protocol: 'acp', max_amount: 700, expires_at: inFuture(t, HOUR) }, 'Mandate')) {
        assert.equal(rawData(await a.request('GET', `/mandates/${res.body.data.id}`)), rawData(res))
        const revoked = await a.request('POST', `/mandates/${res.body.data.id}/revoke`, undefined, { headers: { 'idempotency-key': randomUUID() } })
        assert.equal(revoked.status, 200, revoked.raw)
        assert.deepEqual(Object.keys(revoked.body.data).sort(), schemaProperties(doc, 'Mandate'))
        assert.equal(rawData(await a.request('GET', `/mandates/${res.body.data.id}`)), rawData(revoked))
      }
    })

    test('payments (single write and general path) and refunds answer byte for byte as GET', async () => {
      const a = await t.account()
      const multi = await createMandate(t, a, { usage: 'multi_use', max_amount: 5000, budget_amount: 50_000 })
      const single = await createMandate(t, a, { usage: 'single_use', max_amount: 5000 })
      for (const mandate of [multi, single]) {
        const [payment] = await created(a, '/payments', { mandate_id: mandate.id, amount: 1200 }, 'Payment')
        assert.equal(payment!.body.data.status, 'succeeded')
        assert.equal(rawData(await a.request('GET', `/payments/${payment!.body.data.id}`)), rawData(payment!))

        const [refund] = await created(a, `/payments/${payment!.body.data.id}/refunds`, { amount: 200 }, 'Refund')
        const list = await a.request('GET', `/payments/${payment!.body.data.id}/refunds`)
        assert.equal(list.status, 200)
        assert.ok(list.raw.includes(rawData(refund!)), `${list.raw} does not hold ${rawData(refund!)}`)
      }
    })

    test('webhook endpoints: the created answer is the GET answer plus the secret', async () => {
      const a = await t.account()
      for (const res of await created(a, '/webhook_endpoints', { url: 'https://example.org/hooks', events: ['*'] }, 'CreatedWebhookEndpoint')) {
        const got = await a.request('GET', `/webhook_endpoints/${res.body.data.id}`)
        const { secret, ...withoutSecret } = res.body.data
        assert.match(secret, /^whsec_/)
        assert.equal(JSON.stringify(got.body.data), JSON.stringify(withoutSecret))
        assert.deepEqual(Object.keys(got.body.data).sort(), schemaProperties(doc, 'WebhookEndpoint'))
      }
    })
  })
}

/**
 * A route of the idempotency plugin whose handler returns more than its schema declares, as a service
 * that grew a field would: the extra member never leaves the server, on the first answer, its replay,
 * or through a single write.
 */
describe('the idempotency plugin serializes through the response schema', () => {
  let t: TestApp
  let app: FastifyInstance
  let accountId: string
  const Thing = Type.Object({ data: Type.Object({ id: Type.String(), name: Type.String() }) })

  before(async () => {
    t = await startTestApp(storeKinds()[0]!)
    accountId = (await t.account()).id
    app = Fastify()
    for (const schema of [ErrorResponse, ...ERROR_SCHEMAS]) app.addSchema(schema)
    app.decorateRequest('ctx', null as never)
    app.addHook('onRequest', (request, _reply, done) => {
      request.ctx = { accountId, requestId: request.id }
      done()
    })
    registerErrorHandling(app)
    registerIdempotency(app, { db: t.store.db, clock: t.clock, ttlSeconds: 3600 })
    const schema = { response: { 201: Thing, ...errorResponses(404) } }
    app.post('/things', { config: { idempotency: 'optional' }, schema }, async (_request, reply) => {
      reply.code(201)
      return { data: { id: 'thing_1', name: 'lamp', internal_cost: 42 }, debug: true }
    })
    app.post('/single', {
      config: {
        idempotency: {
          mode: 'optional',
          oneWrite: async (_request, pending) => pending.record(201, { data: { id: 'thing_2', name: 'desk', secret_column: 'x' } }),
        },
      },
      schema,
    }, async () => { throw new Error('the single write answers') })
    app.post('/missing', { config: { idempotency: 'optional' }, schema }, async () => {
      throw Object.assign(errors.resourceMissing('thing', 'thing_3'), { stack_hint: 'internal' })
    })
    await app.ready()
  })
  after(async () => {
    await app.close()
    await t.close()
  })

  const post = async (url: string, key?: string) => toResponse(await app.inject({ method: 'POST', url, headers: key ? { 'idempotency-key': key } : {} }))

  test('without a key, with a key, and on replay: only the declared members', async () => {
    const expected = '{"data":{"id":"thing_1","name":"lamp"}}'
    assert.equal((await post('/things')).raw, expected)
    const key = randomUUID()
    const first = await post('/things', key)
    assert.equal(first.status, 201)
    assert.equal(first.raw, expected)
    const replay = await post('/things', key)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal(replay.raw, expected)
    const saved = await t.store.db.kysely.selectFrom('idempotency_keys').select('response_body')
      .where('account_id', '=', accountId).where('idempotency_key', '=', key).executeTakeFirstOrThrow()
    assert.equal(saved.response_body, expected)
  })

  test('a single write saves and sends the serialized answer', async () => {
    const key = randomUUID()
    const first = await post('/single', key)
    assert.equal(first.status, 201)
    assert.equal(first.raw, '{"data":{"id":"thing_2","name":"desk"}}')
  })

  test('a saved error outcome is the envelope of its status, as first sent and replayed', async () => {
    const key = randomUUID()
    const first = await post('/missing', key)
    assert.equal(first.status, 404)
    // The same bytes as the error handler sends for this status without a key, but for the request id.
    const plain = await post('/missing')
    assert.equal(first.raw.replace(first.body.error.request_id, 'req'), plain.raw.replace(plain.body.error.request_id, 'req'))
    const replay = await post('/missing', key)
    assert.equal(replay.raw, first.raw)
  })
})
