import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { runCli } from '../helpers/cli.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * A first start that makes no development key itself (PostgreSQL, or the embedded store in
 * production) says, through the logger, how to make one (issue 16, item 5); once a key exists it says
 * nothing. The database URL is never repeated: it may hold a password.
 */

const HINT = 'no API keys yet'

/** The hint's log line, once the server has written it (it follows "wishpay listening"). */
async function hintOf(server: ServerProcess): Promise<Record<string, unknown> | undefined> {
  for (let i = 0; i < 100; i++) {
    const line = server.logs().find((l) => String(l.msg).startsWith(HINT))
    if (line) return line
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return undefined
}

async function firstStartSaysHowToMakeAKey(store: TestStore, env: Record<string, string>, command: string) {
  const first = await startServer(env)
  const line = await hintOf(first)
  assert.equal(await first.stop(), 0)
  assert.ok(line, `no hint in:\n${first.output()}`)
  assert.equal(line.level, 40, 'a warning')
  assert.equal(line.command, command)
  assert.ok(String(line.msg).includes(command), String(line.msg))
  if (store.name === 'postgres') assert.equal(first.output().includes(env.DATABASE_URL!), false, 'the URL is not logged')

  // The command as printed (the store's variable as the server had it) makes the key; then no hint.
  const created = await runCli(['keys', 'create', '--account', 'first', '--json'], env)
  assert.equal(created.code, 0, created.stderr)
  assert.match(JSON.parse(created.stdout).key, /^sk_/)
  const second = await startServer(env)
  assert.equal(await second.stop(), 0)
  assert.equal(second.output().includes(HINT), false, second.output())
}

describe('first start without a key', () => {
  test('PostgreSQL: a fresh schema logs how to create a key', { skip: !process.env.TEST_DATABASE_URL && 'TEST_DATABASE_URL not set' }, async () => {
    const store = await openStore('postgres')
    try {
      await firstStartSaysHowToMakeAKey(store, store.env, 'DATABASE_URL=… npx wishpay keys create --account NAME')
    } finally {
      await store.close()
    }
  })

  test('the embedded store in production (no development key) logs the same, with its DATA_DIR', async () => {
    const store = await openStore('sqlite')
    try {
      await firstStartSaysHowToMakeAKey(store, { ...store.env, NODE_ENV: 'production' }, `DATA_DIR=${store.env.DATA_DIR} npx wishpay keys create --account NAME`)
    } finally {
      await store.close()
    }
  })

  test('the embedded store in development makes its key and gives no hint', async () => {
    const store = await openStore('sqlite')
    try {
      const server = await startServer(store.env)
      assert.equal(await server.stop(), 0)
      assert.match(server.output(), /sk_[0-9A-Za-z]{32,}/)
      assert.equal(server.output().includes(HINT), false)
    } finally {
      await store.close()
    }
  })
})
