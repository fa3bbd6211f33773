import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { KEY_CACHE_TTL_MS } from '../../src/modules/accounts/service.js'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { runCli } from '../helpers/cli.js'
import { storeKinds } from '../helpers/stores.js'

for (const kind of storeKinds()) {
  describe(`wishpay CLI (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    /** Calls the API with a key made by the CLI. */
    const call = (key: string, method: 'GET' | 'POST', url: string, body?: unknown) => t.inject({
      method,
      url,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    })

    test('keys create --json prints exactly one JSON object with id, key, account_id, scope', async () => {
      const result = await runCli(['keys', 'create', '--account', 'acme-json', '--json'], t.store.env)
      assert.equal(result.code, 0, result.stderr)
      const lines = result.stdout.trim().split('\n')
      assert.equal(lines.length, 1)
      const created = JSON.parse(lines[0]!)
      assert.deepEqual(Object.keys(created), ['id', 'key', 'account_id', 'scope'])
      assert.match(created.id, /^key_[0-9a-z]{26}$/)
      assert.match(created.key, /^sk_[0-9A-Za-z]{32,}$/)
      assert.match(created.account_id, /^acct_[0-9a-z]{26}$/)
      assert.equal(created.scope, 'write')
      assert.equal((await call(created.key, 'POST', '/wishes', { query: 'a lamp' })).status, 201)
    })

    test('a second key for the same account joins it; --scope read makes a read-only rk_ key', async () => {
      const first = JSON.parse((await runCli(['keys', 'create', '--account', 'acme-read', '--json'], t.store.env)).stdout)
      const read = JSON.parse((await runCli(['keys', 'create', '--account', 'acme-read', '--scope', 'read', '--json'], t.store.env)).stdout)
      assert.equal(read.account_id, first.account_id)
      assert.equal(read.scope, 'read')
      assert.match(read.key, /^rk_[0-9A-Za-z]{32,}$/)
      const wish = await call(first.key, 'POST', '/wishes', { query: 'a chair' })
      assert.equal((await call(read.key, 'GET', `/wishes/${wish.body.data.id}`)).status, 200)
      const denied = await call(read.key, 'POST', '/wishes', { query: 'a table' })
      assert.equal(denied.status, 403)
      assert.equal(denied.body.error.code, 'insufficient_scope')
    })

    test('keys list shows prefixes and never the secret or its hash', async () => {
      const created = JSON.parse((await runCli(['keys', 'create', '--account', 'acme-list', '--json'], t.store.env)).stdout)
      const listed = await runCli(['keys', 'list', '--account', 'acme-list', '--json'], t.store.env)
      assert.equal(listed.code, 0, listed.stderr)
      const keys = JSON.parse(listed.stdout)
      assert.equal(keys.length, 1)
      assert.equal(keys[0].id, created.id)
      assert.equal(keys[0].account_name, 'acme-list')
      assert.equal(keys[0].display_prefix, `${created.key.slice(0, 8)}…`)
      assert.equal(listed.stdout.includes(created.key), false)
      assert.equal(listed.stdout.includes('key_hash'), false)
      const text = await runCli(['keys', 'list', '--account', 'acme-list'], t.store.env)
      assert.match(text.stdout, new RegExp(created.id))
      assert.equal(text.stdout.includes(created.key), false)
    })

    test('keys revoke stops the key within the 1 s key cache; revoking again or an unknown id is reported', async () => {
      const created = JSON.parse((await runCli(['keys', 'create', '--account', 'acme-revoke', '--json'], t.store.env)).stdout)
      assert.equal((await call(created.key, 'GET', '/wishes')).status, 200)
      const revoked = await runCli(['keys', 'revoke', created.id], t.store.env)
      assert.equal(revoked.code, 0, revoked.stderr)
      const revokedAt = Date.now()
      let after = await call(created.key, 'GET', '/wishes')
      while (after.status === 200 && Date.now() - revokedAt < KEY_CACHE_TTL_MS + 500) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        after = await call(created.key, 'GET', '/wishes')
      }
      assert.equal(after.status, 401)
      assert.equal(after.body.error.code, 'invalid_api_key')
      const again = await runCli(['keys', 'revoke', created.id], t.store.env)
      assert.equal(again.code, 0)
      assert.match(again.stdout, /already revoked/)
      const unknown = await runCli(['keys', 'revoke', 'key_nope'], t.store.env)
      assert.equal(unknown.code, 2)
      assert.match(unknown.stderr, /No such key: key_nope/)
    })

    test('usage errors exit 2 with a reason', async () => {
      const noAccount = await runCli(['keys', 'create', '--json'], t.store.env)
      assert.equal(noAccount.code, 2)
      assert.match(noAccount.stderr, /--account/)
      const badScope = await runCli(['keys', 'create', '--account', 'x', '--scope', 'admin'], t.store.env)
      assert.equal(badScope.code, 2)
      assert.match(badScope.stderr, /--scope must be read or write/)
      const unknown = await runCli(['frobnicate'], t.store.env)
      assert.equal(unknown.code, 2)
    })

    test('migrate is idempotent', async () => {
      const result = await runCli(['migrate'], t.store.env)
      assert.equal(result.code, 0, result.stderr)
      assert.match(result.stdout, /up to date/)
    })
  })
}

describe('help and unknown commands (no configuration read)', () => {
  const broken = { PORT: 'abc', DATA_DIR: '/nonexistent-wishpay' }

  test('help lists the local and the remote commands', async () => {
    const result = await runCli(['help'], broken)
    assert.equal(result.code, 0, result.stderr)
    for (const line of ['serve [--no-jobs]', 'counts repair', 'listen --forward-to URL', 'events tail', 'deliveries resend']) assert.ok(result.stdout.includes(line), line)
  })

  test('an unknown command is a usage error, whatever the configuration', async () => {
    const result = await runCli(['frobnicate'], broken)
    assert.equal(result.code, 2)
    assert.match(result.stderr, /^Unknown command: frobnicate\n\nUsage: wishpay <command>/)
    assert.ok(result.stderr.includes('deliveries list ENDPOINT_ID'))
  })

  test('a remote command reads none of the server\'s configuration', async () => {
    const result = await runCli(['deliveries', 'nonsense'], broken)
    assert.equal(result.code, 2)
    assert.doesNotMatch(result.stderr, /Invalid configuration/)
    assert.match(result.stderr, /Usage: wishpay <command>/)
  })
})

describe('configuration errors', () => {
  for (const [name, value] of [['PORT', 'abc'], ['DATABASE_URL', 'mysql://x'], ['LOG_LEVEL', 'loud'], ['DEFAULT_PROTOCOL', 'x402']]) {
    test(`${name}=${value} stops the command with one line naming ${name}`, async () => {
      const result = await runCli(['serve'], { [name!]: value!, DATA_DIR: '/nonexistent-wishpay' })
      assert.equal(result.code, 1)
      const lines = result.stderr.trim().split('\n')
      assert.equal(lines.length, 1, result.stderr)
      assert.match(lines[0]!, new RegExp(`^Invalid configuration: ${name} `))
    })
  }
})
