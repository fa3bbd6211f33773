import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { createAccountService } from '../../src/modules/accounts/service.js'
import { TestClock } from '../helpers/clock.js'
import { killServer, stopServer } from '../helpers/processes.js'
import { startServer } from '../helpers/server.js'
import { type StoreKind, storeKinds } from '../helpers/stores.js'

/**
 * A SQLite server does not load node-pg, and a PostgreSQL server does (src/db/database.ts,
 * src/db/postgres-pool.ts; better-sqlite3 is still loaded on both): node-pg held about 1.4 MB of a SQLite server's heap for nothing
 * (docs/performance.md, thirty-eighth pass). Both drivers are CommonJS, so every file of them the real
 * process loaded is in its `require.cache`, which a preloaded module writes out as the process exits.
 */

const PRELOAD = `
import fs from 'node:fs'
import { createRequire } from 'node:module'
const cache = createRequire(import.meta.url).cache
process.on('exit', () => fs.writeFileSync(process.env.WISHPAY_TEST_MODULES_FILE, JSON.stringify(Object.keys(cache))))
`

/** The packages (under node_modules) that a `wishpay serve` on `kind` loaded, through start-up, a write, a read and SIGTERM. */
async function packagesLoaded(kind: StoreKind): Promise<Set<string>> {
  const store = await kind.open()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-modules-'))
  try {
    const preload = path.join(dir, 'preload.mjs')
    const listed = path.join(dir, 'modules.json')
    fs.writeFileSync(preload, PRELOAD)
    const server = await startServer({ ...store.env, NODE_OPTIONS: `--import=${preload}`, WISHPAY_TEST_MODULES_FILE: listed })
    try {
      // The server migrated the store as it started.
      const { key } = await createAccountService({ db: store.db, clock: new TestClock() }).createKey('modules', 'write')
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
      const created = await fetch(`${server.url}/wishes`, { method: 'POST', headers, body: JSON.stringify({ query: 'a reading lamp' }) })
      assert.equal(created.status, 201)
      const { data: { id } } = await created.json() as { data: { id: string } }
      assert.equal((await fetch(`${server.url}/wishes/${id}`, { headers })).status, 200)
    } catch (error) {
      await killServer(server)
      throw error
    }
    assert.deepEqual(await stopServer(server, 'SIGTERM'), { code: 0, killed: false })
    const files = JSON.parse(fs.readFileSync(listed, 'utf8')) as string[]
    return new Set(files.flatMap((file) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1] ?? []))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
    await store.close()
  }
}

describe('the store drivers a server loads (a real process)', () => {
  for (const kind of storeKinds()) {
    test(kind.name === 'sqlite' ? 'sqlite: better-sqlite3, and no file of node-pg' : `${kind.name}: node-pg`, async () => {
      const packages = await packagesLoaded(kind)
      if (kind.name === 'sqlite') {
        assert.ok(packages.has('better-sqlite3'), `better-sqlite3 not among ${[...packages].join(', ')}`)
        for (const name of ['pg', 'pg-pool', 'pg-protocol', 'pg-types']) assert.ok(!packages.has(name), `${name} was loaded on SQLite`)
      } else {
        assert.ok(packages.has('pg'), `pg not among ${[...packages].join(', ')}`)
      }
    })
  }
})
