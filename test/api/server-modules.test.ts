import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { migrateToLatest } from '../../src/db/migrate.js'
import { createAccountService } from '../../src/modules/accounts/service.js'
import { ensureSigningKey } from '../../src/modules/receipts/signing-keys.js'
import { TestClock } from '../helpers/clock.js'
import { killServer, stopServer } from '../helpers/processes.js'
import { startServer } from '../helpers/server.js'
import { type StoreKind, storeKinds } from '../helpers/stores.js'

/**
 * What a real `wishpay serve` loads (docs/performance.md, thirty-eighth to fortieth passes):
 * - a SQLite server loads better-sqlite3 and no node-pg, a PostgreSQL server node-pg and no
 *   better-sqlite3 (src/db/database.ts, src/db/postgres-pool.ts): node-pg held about 1.4 MB of a SQLite
 *   server's heap for nothing, better-sqlite3's JavaScript about 0.1 MB of a PostgreSQL server's (its
 *   native library is mapped by a first connection only);
 * - neither loads jose while it has its receipt key and signs or verifies nothing (src/lib/jose.ts), nor
 *   the CLI's remote commands (src/cli/remote.ts, imported by src/cli.ts for those commands only).
 * The drivers are CommonJS, so every file of them the process loaded is in its `require.cache`, which a
 * preloaded module writes out as the process exits; it also registers a resolve hook that appends every
 * ES module's URL to a file, from the hooks' own thread.
 */

const PRELOAD = `
import fs from 'node:fs'
import { createRequire, register } from 'node:module'
const cache = createRequire(import.meta.url).cache
process.on('exit', () => fs.writeFileSync(process.env.WISHPAY_TEST_MODULES_FILE, JSON.stringify(Object.keys(cache))))
register('data:text/javascript,' + encodeURIComponent(\`
import fs from 'node:fs'
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  fs.appendFileSync(process.env.WISHPAY_TEST_URLS_FILE, resolved.url + '\\\\n')
  return resolved
}\`))
`

interface Loaded {
  /** The packages under node_modules, CommonJS or ES modules. */
  packages: Set<string>
  /** Every file's path or URL. */
  files: string[]
  /** The URLs the resolve hook reported (ES modules). */
  urls: string[]
}

/** What a `wishpay serve` on `kind` loaded, through start-up, a write, a read and SIGTERM; the store has its receipt key. */
async function modulesLoaded(kind: StoreKind): Promise<Loaded> {
  const store = await kind.open()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-modules-'))
  try {
    const preload = path.join(dir, 'preload.mjs')
    const listed = path.join(dir, 'modules.json')
    const urls = path.join(dir, 'urls.txt')
    fs.writeFileSync(preload, PRELOAD)
    // As after a server's first start: the key exists, so this start signs nothing.
    await migrateToLatest(store.db)
    await ensureSigningKey(store.db, new TestClock())
    const server = await startServer({ ...store.env, NODE_OPTIONS: `--import=${preload}`, WISHPAY_TEST_MODULES_FILE: listed, WISHPAY_TEST_URLS_FILE: urls })
    try {
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
    const resolved = fs.readFileSync(urls, 'utf8').split('\n')
    const files = [...JSON.parse(fs.readFileSync(listed, 'utf8')) as string[], ...resolved]
    return { packages: new Set(files.flatMap((file) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1] ?? [])), files, urls: resolved }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
    await store.close()
  }
}

describe('what a server loads (a real process)', () => {
  for (const kind of storeKinds()) {
    const drivers = kind.name === 'sqlite' ? 'better-sqlite3, and no file of node-pg' : 'node-pg, and no file of better-sqlite3'
    test(`${kind.name}: ${drivers}; neither jose nor the remote CLI commands`, async () => {
      const { packages, files, urls } = await modulesLoaded(kind)
      // The hook sees the ES modules, ours among them (src/ through tsx, or dist/).
      assert.ok(urls.some((url) => url.includes('/node_modules/kysely/')), 'the hook did not report kysely')
      assert.ok(urls.some((url) => /\/(src|dist)\/cli\.[jt]s$/.test(url)), 'the hook did not report cli.js')
      assert.ok(!packages.has('jose'), 'jose was loaded')
      assert.ok(!packages.has('eventsource-parser'), 'eventsource-parser was loaded')
      assert.deepEqual(files.filter((file) => /\/cli\/remote\.[jt]s$/.test(file)), [], 'cli/remote was loaded')
      if (kind.name === 'sqlite') {
        assert.ok(packages.has('better-sqlite3'), `better-sqlite3 not among ${[...packages].join(', ')}`)
        for (const name of ['pg', 'pg-pool', 'pg-protocol', 'pg-types']) assert.ok(!packages.has(name), `${name} was loaded on SQLite`)
      } else {
        assert.ok(packages.has('pg'), `pg not among ${[...packages].join(', ')}`)
        // better-sqlite3 finds its native library through `bindings`, which nothing else of ours loads.
        for (const name of ['better-sqlite3', 'bindings']) assert.ok(!packages.has(name), `${name} was loaded on PostgreSQL`)
      }
    })
  }
})
