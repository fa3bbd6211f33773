import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError, assertInvalid, assertNotFound, assertPaymentError, ids, ISO_MS, newestFirst } from '../helpers/assertions.js'
import { runCli } from '../helpers/cli.js'
import { createMandateRaw, createWish, eventsOf, getList } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Agents (issue 14, item 1), on every store: create, list, get, disable; agent keys by the API and by
 * the CLI; public JWKs; mandates and wishes granted to an agent. What an agent key may do is
 * test/api/agent-scope.test.ts.
 */

const AGENT_ID = /^agt_[0-9a-z]{26}$/

function publicJwk(kind: 'ec' | 'ed25519'): Record<string, unknown> {
  const { publicKey } = kind === 'ec' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519')
  return publicKey.export({ format: 'jwk' }) as Record<string, unknown>
}

function privateJwk(): Record<string, unknown> {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }) as Record<string, unknown>
}

for (const kind of storeKinds()) {
  describe(`agents (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    async function createAgent(a: TestAccount, body: Record<string, unknown> = {}): Promise<any> {
      const res = await a.request('POST', '/agents', { name: 'Shopping assistant', ...body })
      assert.equal(res.status, 201, res.raw)
      return res.body.data
    }

    async function agentKey(a: TestAccount, agentId: string): Promise<string> {
      const res = await a.request('POST', `/agents/${agentId}/keys`, {})
      assert.equal(res.status, 201, res.raw)
      return res.body.data.key
    }

    test('POST /agents 201: the whole object; GET /agents/:id returns it; agent.created is written', async () => {
      const a = await t.account()
      const res = await a.request('POST', '/agents', { name: 'Shopper', metadata: { team: 'blue' } })
      assert.equal(res.status, 201, res.raw)
      const agent = res.body.data
      assert.match(agent.id, AGENT_ID)
      assert.match(agent.created_at, ISO_MS)
      assert.deepEqual(agent, {
        id: agent.id, name: 'Shopper', status: 'active', metadata: { team: 'blue' }, public_jwk: null,
        created_at: agent.created_at, updated_at: agent.created_at,
      })
      const got = await a.request('GET', `/agents/${agent.id}`)
      assert.equal(got.status, 200)
      assert.deepEqual(got.body.data, agent)
      const events = await eventsOf(t, a.id, agent.id)
      assert.deepEqual(events.map((e: any) => e.type), ['agent.created'])
    })

    test('POST /agents: name 1..100, unknown members, public JWKs of EC P-256 and Ed25519 only, no private member', async () => {
      const a = await t.account()
      assertInvalid(await a.request('POST', '/agents', {}), 'name', 'parameter_missing')
      assertInvalid(await a.request('POST', '/agents', { name: '' }), 'name')
      assertInvalid(await a.request('POST', '/agents', { name: 'x'.repeat(101) }), 'name')
      assert.equal((await a.request('POST', '/agents', { name: 'x'.repeat(100) })).status, 201)
      assertInvalid(await a.request('POST', '/agents', { name: 'x', colour: 'red' }), 'colour', 'parameter_unknown')

      const ec = publicJwk('ec')
      assert.deepEqual((await createAgent(a, { public_jwk: ec })).public_jwk, ec)
      const ed = publicJwk('ed25519')
      assert.deepEqual((await createAgent(a, { public_jwk: { ...ed, kid: 'agent-key-1' } })).public_jwk, { ...ed, kid: 'agent-key-1' })

      // A private key: refused, and not stored anywhere.
      const priv = privateJwk()
      const refused = await a.request('POST', '/agents', { name: 'x', public_jwk: priv })
      assert.equal(refused.status, 400, refused.raw)
      assert.equal(refused.body.error.type, 'invalid_request_error')
      assert.ok(!refused.raw.includes(String(priv.d)), 'the private member is not echoed')
      assert.equal((await a.request('POST', '/agents', { name: 'x', public_jwk: { ...ed, d: 'AAAA' } })).status, 400)
      // Other kinds and mismatched pairs.
      assert.equal((await a.request('POST', '/agents', { name: 'x', public_jwk: { kty: 'RSA', n: 'AQAB', e: 'AQAB' } })).status, 400)
      assert.equal((await a.request('POST', '/agents', { name: 'x', public_jwk: { ...ec, crv: 'P-384' } })).status, 400)
      assertInvalid(await a.request('POST', '/agents', { name: 'x', public_jwk: { ...ec, crv: 'Ed25519' } }), 'public_jwk')
      assertInvalid(await a.request('POST', '/agents', { name: 'x', public_jwk: { kty: 'EC', crv: 'P-256', x: ec.x } }), 'public_jwk')
      assertInvalid(await a.request('POST', '/agents', { name: 'x', public_jwk: { ...ed, y: ec.y } }), 'public_jwk')
      assertInvalid(await a.request('POST', '/agents', { name: 'x', public_jwk: { ...ec, alg: 'EdDSA' } }), 'public_jwk')
    })

    test('GET /agents: newest first, limit/offset with meta, status filter; only this account\'s', async () => {
      const a = await t.account()
      const other = await t.account()
      await createAgent(other)
      const made = []
      for (let i = 0; i < 3; i++) made.push(await createAgent(a, { name: `agent ${i}` }))
      const list = await getList(a, '/agents')
      assert.deepEqual(ids(list.data), ids(newestFirst(made)))
      assert.deepEqual(list.meta, { total: 3, limit: 10, offset: 0, has_more: false })
      const page = await getList(a, '/agents?limit=1&offset=1')
      assert.deepEqual(ids(page.data), [ids(newestFirst(made))[1]])
      assert.deepEqual(page.meta, { total: 3, limit: 1, offset: 1, has_more: true })
      await a.request('POST', `/agents/${made[0].id}/disable`, {})
      assert.deepEqual(ids((await getList(a, '/agents?status=disabled')).data), [made[0].id])
      assert.equal((await getList(a, '/agents?status=active')).meta.total, 2)
      assertInvalid(await a.request('GET', '/agents?status=asleep'), 'status')
      assertNotFound(await other.request('GET', `/agents/${made[0].id}`))
      assertNotFound(await a.request('GET', '/agents/agt_unknown'))
    })

    test('POST /agents/:id/disable: 200 once, then 409; agent.disabled is written; an rk_ key may read but not write', async () => {
      const a = await t.account()
      const agent = await createAgent(a)
      t.clock.advance(1000)
      const res = await a.request('POST', `/agents/${agent.id}/disable`, {})
      assert.equal(res.status, 200, res.raw)
      assert.equal(res.body.data.status, 'disabled')
      assert.ok(res.body.data.updated_at > agent.updated_at)
      assertError(await a.request('POST', `/agents/${agent.id}/disable`, {}), 409, 'conflict_error', 'invalid_state_transition')
      assertNotFound(await a.request('POST', '/agents/agt_unknown/disable', {}))
      const events = await eventsOf(t, a.id, agent.id)
      assert.deepEqual(events.map((e: any) => e.type), ['agent.created', 'agent.disabled'])

      assertError(await a.request('POST', '/agents', { name: 'x' }, { key: a.readKey }), 403, 'permission_error', 'insufficient_scope')
      assertError(await a.request('POST', `/agents/${agent.id}/keys`, {}, { key: a.readKey }), 403, 'permission_error', 'insufficient_scope')
      assert.equal((await a.request('GET', `/agents/${agent.id}`, undefined, { key: a.readKey })).status, 200)
    })

    test('POST /agents/:id/keys: an ak_ key shown once, of scope agent; none for a disabled agent; a disabled agent\'s keys stop at once', async () => {
      const a = await t.account()
      const agent = await createAgent(a)
      const res = await a.request('POST', `/agents/${agent.id}/keys`, {})
      assert.equal(res.status, 201, res.raw)
      const created = res.body.data
      assert.deepEqual(Object.keys(created), ['id', 'key', 'account_id', 'scope', 'agent_id'])
      assert.match(created.key, /^ak_[0-9A-Za-z]{40}$/)
      assert.equal(created.account_id, a.id)
      assert.equal(created.scope, 'agent')
      assert.equal(created.agent_id, agent.id)
      assert.equal((await a.request('GET', '/mandates', undefined, { key: created.key })).status, 200)

      await a.request('POST', `/agents/${agent.id}/disable`, {})
      assertError(await a.request('GET', '/mandates', undefined, { key: created.key }), 401, 'authentication_error', 'invalid_api_key')
      assertError(await a.request('POST', `/agents/${agent.id}/keys`, {}), 409, 'conflict_error', 'invalid_state_transition')
      assertNotFound(await a.request('POST', '/agents/agt_unknown/keys', {}))
      const other = await t.account()
      assertNotFound(await other.request('POST', `/agents/${agent.id}/keys`, {}))
    })

    test('a disabled agent\'s key stops within the key cache\'s second when another process disables it', async () => {
      const a = await t.account()
      const agent = await createAgent(a)
      const key = await agentKey(a, agent.id)
      assert.equal((await a.request('GET', '/payments', undefined, { key })).status, 200)
      // Another process: straight in the database, so this process's cache does not know.
      await t.store.db.kysely.updateTable('agents').set({ status: 'disabled' }).where('id', '=', agent.id).execute()
      t.clock.advance(1001)
      assertError(await a.request('GET', '/payments', undefined, { key }), 401, 'authentication_error', 'invalid_api_key')
    })

    test('POST /mandates agent_id: an active agent of this account, else 422 agent_not_usable; returned, filterable', async () => {
      const a = await t.account()
      const other = await t.account()
      const agent = await createAgent(a)
      const theirs = await createAgent(other)
      const disabled = await createAgent(a)
      await a.request('POST', `/agents/${disabled.id}/disable`, {})

      const granted = await createMandateRaw(t, a, { agent_id: agent.id })
      assert.equal(granted.status, 201, granted.raw)
      assert.equal(granted.body.data.agent_id, agent.id)
      const plain = (await createMandateRaw(t, a)).body.data
      assert.equal(plain.agent_id, null)
      assertPaymentError(await createMandateRaw(t, a, { agent_id: 'agt_unknown' }), 'agent_not_usable', 'agent_id')
      assertPaymentError(await createMandateRaw(t, a, { agent_id: theirs.id }), 'agent_not_usable', 'agent_id')
      assertPaymentError(await createMandateRaw(t, a, { agent_id: disabled.id }), 'agent_not_usable', 'agent_id')

      assert.deepEqual(ids((await getList(a, `/mandates?agent_id=${agent.id}`)).data), [granted.body.data.id])
      assert.equal((await getList(a, '/mandates')).meta.total, 2)
      // An agent key cannot grant itself a mandate.
      const key = await agentKey(a, agent.id)
      const selfGranted = await a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 100, expires_at: '2099-01-01T00:00:00Z', agent_id: agent.id }, { key })
      assertError(selfGranted, 403, 'permission_error', 'insufficient_scope')
    })

    test('PUT /wishes/:id agent_id: a pending wish becomes active; null unassigns; refused agents; no agent_id member without one', async () => {
      const a = await t.account()
      const agent = await createAgent(a)
      const wish = await createWish(a, { query: 'a lamp' })
      assert.equal('agent_id' in wish, false)
      const pending = await a.request('PUT', `/wishes/${wish.id}`, { status: 'pending' })
      assert.equal(pending.body.data.status, 'pending')

      const assigned = await a.request('PUT', `/wishes/${wish.id}`, { agent_id: agent.id })
      assert.equal(assigned.status, 200, assigned.raw)
      assert.equal(assigned.body.data.agent_id, agent.id)
      assert.equal(assigned.body.data.status, 'active')

      const unassigned = await a.request('PUT', `/wishes/${wish.id}`, { agent_id: null })
      assert.equal(unassigned.status, 200, unassigned.raw)
      assert.equal('agent_id' in unassigned.body.data, false)
      assert.equal(unassigned.body.data.status, 'active')

      // A status sent along wins over the assignment's.
      await a.request('PUT', `/wishes/${wish.id}`, { status: 'pending' })
      const both = await a.request('PUT', `/wishes/${wish.id}`, { agent_id: agent.id, status: 'pending' })
      assert.equal(both.body.data.status, 'pending')
      assert.equal(both.body.data.agent_id, agent.id)

      assertPaymentError(await a.request('PUT', `/wishes/${wish.id}`, { agent_id: 'agt_unknown' }), 'agent_not_usable', 'agent_id')
      const disabled = await createAgent(a)
      await a.request('POST', `/agents/${disabled.id}/disable`, {})
      assertPaymentError(await a.request('PUT', `/wishes/${wish.id}`, { agent_id: disabled.id }), 'agent_not_usable', 'agent_id')

      // A final wish changes its metadata only.
      await a.request('PUT', `/wishes/${wish.id}`, { status: 'cancelled' })
      const other = await createAgent(a)
      assertError(await a.request('PUT', `/wishes/${wish.id}`, { agent_id: other.id }), 409, 'conflict_error', 'invalid_state_transition', 'agent_id')
    })

    test('CLI: keys create --agent AGT_ID --json prints {id, key, account_id, scope: agent, agent_id}; the key works', async () => {
      const a = await t.account()
      const agent = await createAgent(a)
      const result = await runCli(['keys', 'create', '--agent', agent.id, '--json'], t.store.env)
      assert.equal(result.code, 0, result.stderr)
      const lines = result.stdout.trim().split('\n')
      assert.equal(lines.length, 1)
      const created = JSON.parse(lines[0]!)
      assert.deepEqual(Object.keys(created), ['id', 'key', 'account_id', 'scope', 'agent_id'])
      assert.match(created.key, /^ak_[0-9A-Za-z]{40}$/)
      assert.equal(created.account_id, a.id)
      assert.equal(created.scope, 'agent')
      assert.equal(created.agent_id, agent.id)
      assert.equal((await a.request('GET', '/mandates', undefined, { key: created.key })).status, 200)
      assertError(await a.request('GET', '/wishes', undefined, { key: created.key }), 403, 'permission_error', 'insufficient_scope')

      const unknown = await runCli(['keys', 'create', '--agent', 'agt_unknown'], t.store.env)
      assert.notEqual(unknown.code, 0)
      assert.match(unknown.stderr, /agt_unknown/)
      await a.request('POST', `/agents/${agent.id}/disable`, {})
      const disabled = await runCli(['keys', 'create', '--agent', agent.id], t.store.env)
      assert.notEqual(disabled.code, 0)
      assert.match(disabled.stderr, /disabled/)
    })
  })
}
