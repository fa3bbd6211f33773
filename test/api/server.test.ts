import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, test } from 'node:test'
import { ROOT, WISHPAY_BIN } from '../helpers/cli.js'
import { startServer } from '../helpers/server.js'
import { openStore } from '../helpers/stores.js'

const banneredKey = (output: string) => /^\s+(sk_[0-9A-Za-z]{32,})\s*$/m.exec(output)?.[1]

describe('wishpay serve (a real process)', () => {
  test('first embedded start prints a development key once; it works; logs never hold it; SIGTERM exits 0', async () => {
    const store = await openStore('sqlite')
    try {
      const first = await startServer(store.env)
      const key = banneredKey(first.output())
      assert.ok(key, `no key in the banner:\n${first.output()}`)
      const created = await fetch(`${first.url}/wishes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'a desk lamp' }),
      })
      assert.equal(created.status, 201)
      const requestId = created.headers.get('request-id')
      assert.equal((await fetch(`${first.url}/wishes`, { headers: { authorization: `Bearer ${key}` } })).status, 200)
      assert.equal(await first.stop('SIGTERM'), 0)

      const lines = first.output().split('\n').filter((l) => l.startsWith('{'))
      assert.equal(lines.some((l) => l.includes(key)), false, 'a log line holds the key')
      const line = first.logs().find((l) => l.request_id === requestId)
      assert.ok(line, 'no log line for the request')
      assert.equal(line.route, '/wishes')
      assert.equal(line.status, 201)
      assert.equal(typeof line.duration_ms, 'number')
      assert.match(String(line.account_id), /^acct_/)

      const second = await startServer(store.env)
      assert.equal(banneredKey(second.output()), undefined, 'the banner was shown twice')
      assert.equal((await fetch(`${second.url}/wishes`, { headers: { authorization: `Bearer ${key}` } })).status, 200)
      assert.equal(await second.stop('SIGINT'), 0)
    } finally {
      await store.close()
    }
  })

  test('wishpay worker keeps running on its own until SIGTERM, then exits 0', async () => {
    const store = await openStore('sqlite')
    const child = spawn(process.execPath, [WISHPAY_BIN, 'worker'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...store.env }, stdio: ['ignore', 'pipe', 'pipe'] })
    try {
      let output = ''
      child.stdout.on('data', (chunk) => { output += chunk })
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
      for (let i = 0; i < 100 && !output.includes('wishpay worker running'); i++) await new Promise((r) => setTimeout(r, 100))
      assert.match(output, /wishpay worker running/)
      await new Promise((r) => setTimeout(r, 1500))
      assert.equal(child.exitCode, null, 'the worker exited on its own')
      child.kill('SIGTERM')
      assert.equal(await exited, 0)
    } finally {
      child.kill('SIGKILL')
      await store.close()
    }
  })

  test('no development key in production', async () => {
    const store = await openStore('sqlite')
    try {
      const server = await startServer({ ...store.env, NODE_ENV: 'production' })
      assert.equal(banneredKey(server.output()), undefined)
      assert.equal(await server.stop(), 0)
    } finally {
      await store.close()
    }
  })

  const pgUrl = process.env.TEST_DATABASE_URL
  test('several processes start at once on one new PostgreSQL schema: migrations run once, all serve', { skip: !pgUrl && 'TEST_DATABASE_URL not set' }, async () => {
    const store = await openStore('postgres')
    try {
      const servers = await Promise.all([1, 2, 3].map(() => startServer(store.env)))
      for (const server of servers) {
        assert.equal(banneredKey(server.output()), undefined, 'no development key on PostgreSQL')
        assert.equal((await fetch(`${server.url}/readyz`)).status, 200)
      }
      const migrated = servers.filter((s) => s.logs().some((l) => l.msg === 'database migrated'))
      assert.equal(migrated.length, 1, 'exactly one process applied the migrations')
      for (const server of servers) assert.equal(await server.stop(), 0)
    } finally {
      await store.close()
    }
  })
})
