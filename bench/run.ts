/**
 * `npm run bench [-- --quick]`: every scenario beside its floor, on SQLite and (with BENCH_DATABASE_URL
 * or TEST_DATABASE_URL) PostgreSQL. Prints a table and writes bench/results/<date>-<store>.json.
 * Timings are reported, never asserted.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { paymentFloor } from './floors.js'
import { ROOT, type RunningProcess, startHello, startWishpay } from './processes.js'
import { load, type LoadResult, newPaymentBody } from './scenarios.js'
import { seedBasics, seedWishes } from './seed.js'
import { seedPayments } from './seed-pages.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { openStore, type TestStore } from '../test/helpers/stores.js'

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    store: { type: 'string' },
    // For working on one thing: `--only payments,get` runs those scenarios; results are not written.
    only: { type: 'string' },
    wishes: { type: 'string' },
    // Payments of the `pages` scenario's account (default 1,000,000; 20,000 with --quick).
    pages: { type: 'string' },
  },
})
const quick = values.quick
const only = values.only?.split(',')
const partial = quick || only !== undefined || values.wishes !== undefined || values.pages !== undefined
const DURATION = quick ? 1 : 10
const WARMUP = quick ? 1 : 3
const CONNECTIONS = 64
const WISHES = values.wishes ? Number(values.wishes) : quick ? 10_000 : 1_000_000
const PAGES = values.pages ? Number(values.pages) : quick ? 20_000 : 1_000_000
const SCENARIOS = ['payments', 'replay', 'get', 'wishes', 'list', 'pages'] as const
const runs = (scenario: (typeof SCENARIOS)[number]) => only === undefined || only.includes(scenario)
if (only?.some((s) => !(SCENARIOS as readonly string[]).includes(s))) throw new Error(`--only takes ${SCENARIOS.join(',')}`)

interface Row {
  scenario: string
  requestsPerSecond: number
  p50: number
  p99: number
  errors: number
  peakRssMb: number
  floor: string
  floorRequestsPerSecond: number | null
  ratio: number | null
}

function row(scenario: string, result: LoadResult, server: RunningProcess, floor: string, floorRps: number | null): Row {
  return {
    scenario,
    requestsPerSecond: Math.round(result.requestsPerSecond),
    p50: result.p50,
    p99: result.p99,
    errors: result.errors,
    peakRssMb: server.peakRssMb(),
    floor,
    floorRequestsPerSecond: floorRps === null ? null : Math.round(floorRps),
    ratio: floorRps ? Math.round((result.requestsPerSecond / floorRps) * 100) / 100 : null,
  }
}

async function runStore(store: TestStore): Promise<Row[]> {
  const rows: Row[] = []
  const seed = await seedBasics(store)
  if (runs('list')) {
    process.stderr.write(`[${store.name}] seeding ${WISHES} wishes…\n`)
    await seedWishes(store, seed.accountId, WISHES)
  }
  const pages = runs('pages') ? await seedPayments(store, PAGES) : undefined

  // The floors run alone, before the service starts, so neither slows the other.
  process.stderr.write(`[${store.name}] floors…\n`)
  const dbFloor = runs('payments') ? await paymentFloor(store, seed, DURATION * 1000, CONNECTIONS) : undefined
  const hello = await startHello()
  const helloLoad = { url: hello.url, connections: CONNECTIONS, durationSeconds: DURATION, warmupSeconds: WARMUP }
  const helloGet = runs('get') ? await load({ ...helloLoad, path: '/payments/x' }) : undefined
  const helloPost = runs('replay') || runs('wishes') ? await load({ ...helloLoad, path: '/wishes', method: 'POST', body: () => ({ query: 'x' }) }) : undefined
  await hello.stop()

  const server = await startWishpay(store.env)
  try {
    const base = { url: server.url, key: seed.key, connections: CONNECTIONS, durationSeconds: DURATION, warmupSeconds: WARMUP }
    process.stderr.write(`[${store.name}] scenarios…\n`)
    if (dbFloor) {
      const pay = await load({ ...base, path: '/payments', method: 'POST', body: newPaymentBody(seed.mandateId) })
      rows.push(row('POST /payments (new key each)', pay, server, 'database work, no HTTP', dbFloor.requestsPerSecond))
    }
    if (runs('replay')) {
      const replayBody = { mandate_id: seed.mandateId, amount: 1, idempotency_key: 'bench-replay' }
      const replay = await load({ ...base, path: '/payments', method: 'POST', body: () => replayBody })
      rows.push(row('POST /payments (replay one key)', replay, server, 'hello-world POST', helloPost!.requestsPerSecond))
    }
    if (helloGet) {
      const get = await load({ ...base, path: `/payments/${seed.paymentId}` })
      rows.push(row('GET /payments/:id', get, server, 'hello-world GET', helloGet.requestsPerSecond))
    }
    if (runs('wishes')) {
      const wish = await load({ ...base, path: '/wishes', method: 'POST', body: () => ({ query: 'a bench wish' }) })
      rows.push(row('POST /wishes', wish, server, 'hello-world POST', helloPost!.requestsPerSecond))
    }
    if (runs('list')) {
      const first = await load({ ...base, path: '/wishes?status=active&limit=10' })
      rows.push(row(`GET /wishes?status=active&limit=10 (${WISHES} rows)`, first, server, 'p50/p99 only', null))
      const deep = WISHES >= 1_000_000 ? 900_000 : Math.floor(WISHES * 0.9)
      const far = await load({ ...base, path: `/wishes?status=active&limit=10&offset=${deep}` })
      rows.push(row(`… same at offset=${deep}`, far, server, 'p50/p99 only', null))
    }
    if (pages) {
      // Cursor pagination (issue 16): the page at 90 % of the account's payments, by cursor and by offset,
      // beside the first page. --quick only runs the cursor page, to check that the code path works. At 4
      // connections: every answer counts meta.total over the account's payments (docs/performance.md), and
      // at 64 all three scenarios queue past autocannon's 10 s timeout, which would compare nothing.
      const list = { ...base, key: pages.key, connections: 4 }
      const deep = Math.floor(pages.count * 0.9)
      const label = `GET /payments?limit=10 (${pages.count} rows, 4 connections)`
      if (!quick) rows.push(row(label, await load({ ...list, path: '/payments?limit=10' }), server, 'p50/p99 only', null))
      const cursor = await load({ ...list, path: `/payments?limit=10&starting_after=${pages.idAt(deep - 1)}` })
      rows.push(row(quick ? `${label} by cursor at ${deep}` : `… same by starting_after at ${deep}`, cursor, server, 'p50/p99 only', null))
      if (!quick) rows.push(row(`… same at offset=${deep}`, await load({ ...list, path: `/payments?limit=10&offset=${deep}` }), server, 'p50/p99 only', null))
    }
  } finally {
    await server.stop()
  }
  return rows
}

function print(store: string, rows: Row[]): void {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'peak RSS MB', 'floor', 'floor req/s', 'ratio']
  const lines = rows.map((r) => [r.scenario, r.requestsPerSecond, r.p50, r.p99, r.errors, r.peakRssMb, r.floor, r.floorRequestsPerSecond ?? '', r.ratio ?? ''].map(String))
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const format = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`
  process.stdout.write(`\n${store}${partial ? ' (partial run, not written)' : ''}\n${format(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n${lines.map(format).join('\n')}\n`)
}

const postgresUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL
const kinds: ('sqlite' | 'postgres')[] = values.store ? [values.store as 'sqlite' | 'postgres'] : ['sqlite', ...(postgresUrl ? ['postgres' as const] : [])]
const machine = { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', memoryGb: Math.round(os.totalmem() / 2 ** 30), node: process.version }
for (const kind of kinds) {
  // A fresh store per run, as the tests use; seeding in bulk takes longer than the serving query bound.
  const store = await openStore(kind, { postgresUrl, queryTimeoutMs: 0 })
  try {
    await migrateToLatest(store.db)
    const rows = await runStore(store)
    print(kind, rows)
    if (!partial) {
      const file = path.join(ROOT, 'bench/results', `${new Date().toISOString().slice(0, 10)}-${kind}.json`)
      fs.writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), store: kind, machine, durationSeconds: DURATION, connections: CONNECTIONS, rows }, null, 2)}\n`)
      process.stdout.write(`written ${path.relative(ROOT, file)}\n`)
    }
  } finally {
    await store.close()
  }
}
