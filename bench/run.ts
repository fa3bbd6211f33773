/**
 * `npm run bench [-- --quick]`: every scenario beside its floor, on SQLite and (with BENCH_DATABASE_URL
 * or TEST_DATABASE_URL) PostgreSQL, each through autocannon and through wrk. Prints a table and writes
 * bench/results/<date>-<store>.json. Timings are reported, never asserted.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { paymentFloor } from './floors.js'
import { openLoop, type OpenLoopResult } from './open-loop.js'
import { pgbenchFloor, type PgbenchResult, pgbenchVersion } from './pgbench.js'
import { ROOT, type RunningProcess, startHello, startLookup, startWishpay } from './processes.js'
import { benchPostgresUrl, requireBenchPostgresUrl } from './postgres-url.js'
import { describeCommits, scrapeCommits } from './server-commits.js'
import { describeDurations, scrapeDurations } from './server-durations.js'
import { scale, type ScaleRow } from './scale.js'
import { BUDGETED_WISH_BODY, type Driven, drive, PAYMENT_BODY, primeReplay, replayBody, settle, WISH_BODY } from './scenarios.js'
import { seedBasics, seedMandates, seedWishes } from './seed.js'
import { seedPayments } from './seed-pages.js'
import { cell, printTable } from './table.js'
import { wrkVersion } from './wrk.js'
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
    // pgbench's clients for the POST /payments floor on PostgreSQL (default: the load's 64 connections).
    'pgbench-clients': { type: 'string' },
    // Measured seconds of each scenario and floor (default 10; 1 with --quick), e.g. `--only scale --quick --duration 3`.
    duration: { type: 'string' },
    // Profiles the server: a .cpuprofile per server process in DIR, written when it stops
    // (docs/profiles/flamegraph.mjs renders one), e.g. `--only payments --store sqlite --cpu-prof /tmp/p`.
    'cpu-prof': { type: 'string' },
  },
})
const quick = values.quick
const only = values.only?.split(',')
const partial = quick || only !== undefined || values['cpu-prof'] !== undefined || values.wishes !== undefined || values.pages !== undefined || values['pgbench-clients'] !== undefined || values.duration !== undefined
const DURATION = values.duration ? Number(values.duration) : quick ? 1 : 10
const WARMUP = quick ? 1 : 3
const CONNECTIONS = 64
const PGBENCH_CLIENTS = values['pgbench-clients'] ? Number(values['pgbench-clients']) : CONNECTIONS
const WISHES = values.wishes ? Number(values.wishes) : quick ? 10_000 : 1_000_000
const PAGES = values.pages ? Number(values.pages) : quick ? 20_000 : 1_000_000
// `scale` restarts the server three times and drives it six times: only when asked for, or in a full run.
const SCENARIOS = ['payments', 'replay', 'get', 'wishes', 'list', 'pages', 'scale'] as const
const runs = (scenario: (typeof SCENARIOS)[number]) => (only === undefined ? scenario !== 'scale' || !quick : only.includes(scenario))
if (only?.some((s) => !(SCENARIOS as readonly string[]).includes(s))) throw new Error(`--only takes ${SCENARIOS.join(',')}`)
const SCALE_MANDATES = 64
const SCALE_WORKERS = [1, 2, 4]

const [WRK, PGBENCH] = await Promise.all([wrkVersion(), pgbenchVersion()])

interface Row {
  scenario: string
  /** autocannon */
  requestsPerSecond: number
  p50: number
  p99: number
  errors: number
  /** wrk (null when it is not installed) */
  wrkRequestsPerSecond: number | null
  wrkP50: number | null
  wrkP99: number | null
  wrkErrors: number | null
  peakRssMb: number
  floor: string
  floorRequestsPerSecond: number | null
  ratio: number | null
  /** A second floor where there is one: POST /payments on PostgreSQL keeps the node-pg floor here. */
  floor2: string | null
  floor2RequestsPerSecond: number | null
  ratio2: number | null
  /** The hello-world floor through wrk, and wrk's req/s over it: the outside probe measured so. */
  wrkFloorRequestsPerSecond: number | null
  wrkRatio: number | null
  /**
   * Server CPU (user + system, every process of it) per request of autocannon's measured seconds, µs.
   * Node's only: on PostgreSQL the database's CPU is not in it (the scale scenario reports that).
   */
  serverCpuUs: number | null
  /** The floor server's CPU per request, µs (the hello-world floors only). */
  floorCpuUs: number | null
  /**
   * The floor's CPU per request over the service's (a hello-world floor only): the ratio its throughput
   * would have if both were CPU-bound on the same core. It moves less with the machine than `ratio`.
   */
  cpuRatio: number | null
  /** The machine's 1-minute load average when the row was measured: the figures move with it. */
  load1: number
}

interface Floor {
  label: string
  requestsPerSecond: number | null
  /** The floor server's CPU per request, µs (the hello-world floors). */
  cpuUsPerRequest?: number | null
  /** The same floor through wrk (the hello-world floors, when wrk is installed). */
  wrkRequestsPerSecond?: number | null
}

const ratio = (rps: number, floorRps: number | null | undefined) => (floorRps ? Math.round((rps / floorRps) * 100) / 100 : null)

function row(scenario: string, result: Driven, server: RunningProcess, floor: Floor | null, floor2?: Floor): Row {
  const rps = result.autocannon.requestsPerSecond
  return {
    scenario,
    requestsPerSecond: Math.round(rps),
    p50: result.autocannon.p50,
    p99: result.autocannon.p99,
    errors: result.autocannon.errors,
    wrkRequestsPerSecond: result.wrk ? Math.round(result.wrk.requestsPerSecond) : null,
    wrkP50: result.wrk?.p50 ?? null,
    wrkP99: result.wrk?.p99 ?? null,
    wrkErrors: result.wrk?.errors ?? null,
    peakRssMb: server.peakRssMb(),
    floor: floor?.label ?? 'p50/p99 only',
    floorRequestsPerSecond: floor?.requestsPerSecond == null ? null : Math.round(floor.requestsPerSecond),
    ratio: ratio(rps, floor?.requestsPerSecond),
    floor2: floor2?.label ?? null,
    floor2RequestsPerSecond: floor2?.requestsPerSecond == null ? null : Math.round(floor2.requestsPerSecond),
    ratio2: ratio(rps, floor2?.requestsPerSecond),
    wrkFloorRequestsPerSecond: floor?.wrkRequestsPerSecond == null ? null : Math.round(floor.wrkRequestsPerSecond),
    wrkRatio: result.wrk ? ratio(result.wrk.requestsPerSecond, floor?.wrkRequestsPerSecond) : null,
    serverCpuUs: result.autocannon.cpuUsPerRequest,
    floorCpuUs: floor?.cpuUsPerRequest ?? null,
    cpuRatio: floor?.cpuUsPerRequest && result.autocannon.cpuUsPerRequest
      ? Math.round((floor.cpuUsPerRequest / result.autocannon.cpuUsPerRequest) * 100) / 100
      : null,
    load1: os.loadavg()[0]!,
  }
}

/**
 * A row for an open-loop run (bench/open-loop.ts) at half the closed loop's rate: its p50 and p99 are
 * the latency at a load the server carries, beside the closed loop's latency at saturation.
 */
const OPEN_LOOP_NOTE = `open loop: requests sent on a schedule at half the closed loop's req/s, over at most ${CONNECTIONS} connections, latency counted from when each was due (bench/open-loop.ts)`

function openLoopRow(scenario: string, result: OpenLoopResult, server: RunningProcess): Row {
  const measured = { requestsPerSecond: result.requestsPerSecond, p50: result.p50, p99: result.p99, errors: result.errors, requests: result.requests, cpuUsPerRequest: null }
  return row(`${scenario}, open loop at ${result.offeredPerSecond} req/s (half)`, { autocannon: measured, wrk: null }, server, null)
}

function pgbenchLabel(result: PgbenchResult): Floor {
  if (!result.ok) return { label: result.reason, requestsPerSecond: null }
  return { label: `pgbench, same SQL, ${PGBENCH_CLIENTS} clients, -M prepared`, requestsPerSecond: result.requestsPerSecond }
}

interface StoreResult {
  rows: Row[]
  notes: string[]
  scale: ScaleRow[] | null
  /** Why `scale` did not run on this store, when it was asked for. */
  scaleSkipped: string | null
}

async function runStore(store: TestStore): Promise<StoreResult> {
  const rows: Row[] = []
  const notes: string[] = []
  const seed = await seedBasics(store)
  if (runs('list')) {
    process.stderr.write(`[${store.name}] seeding ${WISHES} wishes…\n`)
    await seedWishes(store, seed.accountId, WISHES)
  }
  const pages = runs('pages') ? await seedPayments(store, PAGES) : undefined

  // The payment floors run alone, before the service starts, so neither slows the other.
  process.stderr.write(`[${store.name}] floors…\n`)
  const base = { connections: CONNECTIONS, durationSeconds: DURATION, warmupSeconds: WARMUP }
  let paymentFloors: { first: Floor, second?: Floor } | undefined
  if (runs('payments')) {
    const driver = await paymentFloor(store, seed, DURATION * 1000, CONNECTIONS)
    if (store.name === 'sqlite') {
      paymentFloors = { first: { label: 'database work, no HTTP', requestsPerSecond: driver.requestsPerSecond } }
    } else {
      const pgbench = await pgbenchFloor(store, seed, DURATION, PGBENCH_CLIENTS)
      if (pgbench.ok) {
        notes.push(`pgbench: ${pgbench.transactions} payments, latency average ${pgbench.latencyMs} ms; the mandate's budget has ${pgbench.budgetLeft.toLocaleString('en-US')} of 1,000,000,000,000 left`)
      }
      paymentFloors = { first: pgbenchLabel(pgbench), second: { label: 'node-pg, pool of 10, six round trips', requestsPerSecond: driver.requestsPerSecond } }
      notes.push('floor 2 of POST /payments: node-pg running the same four statements in one transaction (begin, four, commit: six round trips) through a pool of 10, the service\'s size')
    }
  }
  // The hello-world floors run just before the scenario each is the floor of, beside the started (idle)
  // service: each ratio then divides two runs a few seconds apart (autocannon's are a wrk run apart)
  // rather than minutes, between which this machine's speed moved by a third (docs/performance.md,
  // eighth pass).
  const helloServer = runs('get') || runs('replay') || runs('wishes') ? await startHello() : undefined
  const floorOf = (label: string, result: Driven): Floor => ({
    label,
    requestsPerSecond: result.autocannon.requestsPerSecond,
    cpuUsPerRequest: result.autocannon.cpuUsPerRequest,
    wrkRequestsPerSecond: result.wrk?.requestsPerSecond ?? null,
  })
  /** A floor server driven with `request`, as the scenarios are. */
  const driveFloor = (floorServer: RunningProcess, request: { path: string, method?: 'GET' | 'POST', body?: string }, withWrk: boolean) =>
    drive({ ...base, url: floorServer.url, cpuOf: () => floorServer.pids(), ...request }, withWrk)
  const helloFloor = (request: { path: string, method?: 'GET' | 'POST', body?: string }) => async (): Promise<Floor> =>
    floorOf(`hello-world ${request.method ?? 'GET'}`, await driveFloor(helloServer!, request, WRK !== null))
  const helloGet = helloFloor({ path: '/payments/x' })
  // GET's second floor: the hello-world plus the service's read of the payment (bench/lookup-server.ts),
  // started in the try below, so that a failure stops the servers already started.
  let lookupServer: RunningProcess | undefined
  const lookupGet = async (): Promise<Floor> => {
    const label = `hello-world + the same ${store.name === 'sqlite' ? 'SQLite read' : 'batched PostgreSQL read'}`
    const result = await driveFloor(lookupServer!, { path: `/payments/${seed.paymentId}` }, false)
    // An answer that is not the payment (a 404, a database error) is no floor: say so beside the figure.
    if (result.autocannon.errors > 0) notes.push(`floor 2 of GET /payments/:id answered ${result.autocannon.errors} errors: its figure is not a floor`)
    return floorOf(label, result)
  }
  const helloPost = helloFloor({ path: '/wishes', method: 'POST', body: '{"query":"x"}' })

  const main = SCENARIOS.filter((s) => s !== 'scale').some(runs)
  let server: RunningProcess | undefined
  try {
    if (runs('get')) {
      lookupServer = await startLookup({ LOOKUP_ACCOUNT_ID: seed.accountId, ...(store.name === 'sqlite' ? { LOOKUP_SQLITE_PATH: store.sqlitePath } : { LOOKUP_DATABASE_URL: store.env.DATABASE_URL! }) })
    }
    server = main ? await startWishpay(store.env, { cpuProfileDir: values['cpu-prof'] }) : undefined
    if (server) {
      const started = server
      const service = { ...base, url: started.url, key: seed.key, cpuOf: () => started.pids() }
      const withWrk = WRK !== null
      // Before each run, its floor's included: the server is no longer busy with what the previous run left queued.
      const settled = () => settle(started.url, seed.key, `/payments/${seed.paymentId}`)
      process.stderr.write(`[${store.name}] scenarios…\n`)
      /**
       * Runs a write scenario and notes, from the server's /metrics, its shared commits over it and its own
       * time for the route's requests (beside the generator's latency, which adds the waits it cannot see).
       */
      const withServerNotes = async <T>(label: string, route: string, run: () => Promise<T>): Promise<T> => {
        const [commitsBefore, durationsBefore] = await Promise.all([scrapeCommits(started.url), scrapeDurations(started.url, 'POST', route)])
        const result = await run()
        const [commitsAfter, durationsAfter] = await Promise.all([scrapeCommits(started.url), scrapeDurations(started.url, 'POST', route)])
        for (const line of [describeCommits(label, commitsBefore, commitsAfter), describeDurations(label, durationsBefore, durationsAfter)]) {
          if (line) notes.push(line)
        }
        return result
      }
      if (paymentFloors) {
        const pay = await withServerNotes('POST /payments', '/payments', () => drive({ ...service, path: '/payments', method: 'POST', body: PAYMENT_BODY, mandates: [seed.mandateId] }, withWrk, settled))
        rows.push(row('POST /payments (new key each)', pay, server, paymentFloors.first, paymentFloors.second))
        const half = Math.max(1, Math.round(pay.autocannon.requestsPerSecond / 2))
        await settled()
        rows.push(openLoopRow('… same', await withServerNotes('POST /payments, open loop', '/payments', () => openLoop({ ...service, path: '/payments', method: 'POST', body: PAYMENT_BODY, mandates: [seed.mandateId], rate: half })), server))
      }
      if (runs('replay')) {
        await settled()
        const floor = await helloPost()
        await primeReplay(service.url, seed.key, seed.mandateId)
        const replay = await drive({ ...service, path: '/payments', method: 'POST', body: replayBody(seed.mandateId) }, withWrk, settled)
        rows.push(row('POST /payments (replay one key)', replay, server, floor))
      }
      if (runs('get')) {
        await settled()
        const floor = await helloGet()
        const floor2 = await lookupGet()
        const get = await drive({ ...service, path: `/payments/${seed.paymentId}` }, withWrk, settled)
        rows.push(row('GET /payments/:id', get, server, floor, floor2))
        notes.push(`floor 2 of GET /payments/:id: ${floor2.label} (bench/lookup-server.ts), ${floor2.cpuUsPerRequest ?? 'n/a'} µs of CPU a request; no authentication, validation, response schema, log line or hook but the turn budget`)
      }
      if (runs('wishes')) {
        await settled()
        const floor = await helloPost()
        const wish = await withServerNotes('POST /wishes', '/wishes', () => drive({ ...service, path: '/wishes', method: 'POST', body: WISH_BODY }, withWrk, settled))
        rows.push(row('POST /wishes', wish, server, floor))
        const half = Math.max(1, Math.round(wish.autocannon.requestsPerSecond / 2))
        await settled()
        rows.push(openLoopRow('… same', await withServerNotes('POST /wishes, open loop', '/wishes', () => openLoop({ ...service, path: '/wishes', method: 'POST', body: WISH_BODY, rate: half })), server))
        await settled()
        const budgeted = await withServerNotes('POST /wishes with a budget', '/wishes', () => drive({ ...service, path: '/wishes', method: 'POST', body: BUDGETED_WISH_BODY }, withWrk, settled))
        rows.push(row('… same, each with a budget', budgeted, server, floor))
      }
      if (runs('list')) {
        const first = await drive({ ...service, path: '/wishes?status=active&limit=10' }, withWrk, settled)
        rows.push(row(`GET /wishes?status=active&limit=10 (${WISHES} rows)`, first, server, null))
        const deep = WISHES >= 1_000_000 ? 900_000 : Math.floor(WISHES * 0.9)
        // At 4 connections, as `pages`: an offset walks the index up to its rows, and at 64 connections every
        // request queued past autocannon's 10 s timeout (0 req/s, 128 timeouts), which measured nothing.
        const far = await drive({ ...service, connections: 4, path: `/wishes?status=active&limit=10&offset=${deep}` }, withWrk, settled)
        rows.push(row(`… same at offset=${deep} (4 connections)`, far, server, null))
      }
      if (pages) {
        // Cursor pagination (issue 16): the page at 90 % of the account's payments, by cursor and by offset,
        // beside the first page. --quick only runs the cursor page, to check that the code path works. At 4
        // connections: every answer counts meta.total over the account's payments (docs/performance.md), and
        // at 64 all three scenarios queue past autocannon's 10 s timeout, which would compare nothing.
        const list = { ...service, key: pages.key, connections: 4 }
        const deep = Math.floor(pages.count * 0.9)
        const label = `GET /payments?limit=10 (${pages.count} rows, 4 connections)`
        if (!quick) rows.push(row(label, await drive({ ...list, path: '/payments?limit=10' }, withWrk, settled), server, null))
        const cursor = await drive({ ...list, path: `/payments?limit=10&starting_after=${pages.idAt(deep - 1)}` }, withWrk, settled)
        rows.push(row(quick ? `${label} by cursor at ${deep}` : `… same by starting_after at ${deep}`, cursor, server, null))
        if (!quick) rows.push(row(`… same at offset=${deep}`, await drive({ ...list, path: `/payments?limit=10&offset=${deep}` }, withWrk, settled), server, null))
        // The same account's events, one a payment: the list that grows fastest (migration 0013's counters).
        const events = `GET /events?limit=10 (${pages.count} rows, 4 connections)`
        if (!quick) rows.push(row(events, await drive({ ...list, path: '/events?limit=10' }, withWrk, settled), server, null))
        const eventCursor = await drive({ ...list, path: `/events?limit=10&starting_after=${pages.eventIdAt(deep - 1)}` }, withWrk, settled)
        rows.push(row(quick ? `${events} by cursor at ${deep}` : `… same by starting_after at ${deep}`, eventCursor, server, null))
        // One delivery attempt of each event to the account's endpoint (migration 0014's counters).
        const deliveries = `GET /webhook_endpoints/:id/deliveries?limit=10 (${pages.count} rows, 4 connections)`
        const deliveriesPath = `/webhook_endpoints/${pages.endpointId}/deliveries?limit=10`
        if (!quick) rows.push(row(deliveries, await drive({ ...list, path: deliveriesPath }, withWrk, settled), server, null))
        const deliveryCursor = await drive({ ...list, path: `${deliveriesPath}&starting_after=${pages.attemptIdAt(deep - 1)}` }, withWrk, settled)
        rows.push(row(quick ? `${deliveries} by cursor at ${deep}` : `… same by starting_after at ${deep}`, deliveryCursor, server, null))
      }
    }
  } finally {
    // All of them, even if one fails to stop.
    await Promise.allSettled([server?.stop(), helloServer?.stop(), lookupServer?.stop()])
  }

  let scaleRows: ScaleRow[] | null = null
  let scaleSkipped: string | null = null
  if (runs('scale')) {
    if (store.name === 'sqlite') {
      scaleSkipped = 'scale: skipped on SQLite (WORKERS needs PostgreSQL: the embedded store is served by one process)'
    } else {
      const mandates = await seedMandates(store, seed.accountId, SCALE_MANDATES)
      scaleRows = await scale(store, seed, mandates, { workerCounts: SCALE_WORKERS, connections: CONNECTIONS, durationSeconds: DURATION, warmupSeconds: WARMUP, withWrk: WRK !== null })
    }
  }
  if (rows.some((r) => r.scenario.includes('open loop'))) notes.push(OPEN_LOOP_NOTE)
  return { rows, notes, scale: scaleRows, scaleSkipped }
}

/** What a wrk floor cell says when it is empty: `n/a` on a hello-world's row without wrk, else nothing. */
const wrkMissing = (r: Row) => (WRK === null && r.floor.startsWith('hello-world') ? 'n/a' : '')

function print(store: string, result: StoreResult): void {
  const title = `${store}${partial ? ' (partial run, not written)' : ''}`
  const loads = [...result.rows, ...(result.scale ?? [])].map((r) => r.load1)
  const loadNote = loads.length > 0 ? [`load average (1 min) while measuring: ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)} on ${os.cpus().length} cores`] : []
  const wrkNote = WRK ? [] : ['wrk not found: wrk columns n/a (Debian: apt-get install wrk)']
  if (result.rows.length > 0) {
    printTable(title,
      ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'wrk req/s', 'wrk p99 ms', 'wrk errors', 'peak RSS MB', 'floor', 'floor req/s', 'ratio', 'floor 2 req/s', 'ratio 2', 'wrk floor req/s', 'wrk ratio', 'CPU µs/req', 'floor CPU µs/req', 'CPU ratio'],
      result.rows.map((r) => [
        r.scenario, cell(r.requestsPerSecond), cell(r.p50), cell(r.p99), cell(r.errors),
        cell(r.wrkRequestsPerSecond, 'n/a'), cell(r.wrkP99, 'n/a'), cell(r.wrkErrors, 'n/a'), cell(r.peakRssMb),
        r.floor, cell(r.floorRequestsPerSecond), cell(r.ratio), cell(r.floor2RequestsPerSecond), cell(r.ratio2),
        cell(r.wrkFloorRequestsPerSecond, wrkMissing(r)), cell(r.wrkRatio, wrkMissing(r)),
        cell(r.serverCpuUs), cell(r.floorCpuUs), cell(r.cpuRatio),
      ]),
      [...result.notes, ...wrkNote, ...loadNote])
  }
  if (result.scale) {
    printTable(`${title}: scale-out, POST /payments, ${CONNECTIONS} connections`,
      ['shape', 'WORKERS', 'processes', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'wrk req/s', 'wrk p99 ms', 'wrk errors',
        'committed', 'server CPU ms/payment', 'postgres CPU ms/payment', 'autocannon CPU ms/payment', 'cores busy', 'peak RSS MB (sum)', 'load 1 min'],
      result.scale.map((r) => [
        r.shape, cell(r.workers), cell(r.processes), cell(r.requestsPerSecond), cell(r.p50), cell(r.p99), cell(r.errors),
        cell(r.wrk ? Math.round(r.wrk.requestsPerSecond) : null, 'n/a'), cell(r.wrk?.p99, 'n/a'), cell(r.wrk?.errors, 'n/a'),
        cell(r.paymentsCommitted), cell(r.serverCpuMs), cell(r.postgresCpuMs), cell(r.generatorCpuMs), cell(r.coresBusy), cell(r.peakRssMb), r.load1.toFixed(2),
      ]),
      ['CPU over autocannon\'s measured seconds, per payment the database committed in them (`committed`): the server\'s processes (primary and workers), PostgreSQL\'s backends of this server and its background processes, and the harness (autocannon); cores busy is their sum per second of the run'])
  }
  if (result.scaleSkipped) process.stdout.write(`\n${result.scaleSkipped}\n`)
}

const kinds: ('sqlite' | 'postgres')[] = values.store ? [values.store as 'sqlite' | 'postgres'] : ['sqlite', ...(benchPostgresUrl ? ['postgres' as const] : [])]
const machine = { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', memoryGb: Math.round(os.totalmem() / 2 ** 30), node: process.version, wrk: WRK, pgbench: PGBENCH }
for (const kind of kinds) {
  // A fresh store per run, as the tests use; seeding in bulk takes longer than the serving query bound.
  const store = kind === 'postgres'
    ? await openStore('postgres', { postgresUrl: requireBenchPostgresUrl(), queryTimeoutMs: 0 })
    : await openStore('sqlite')
  try {
    await migrateToLatest(store.db)
    const result = await runStore(store)
    print(kind, result)
    if (!partial) {
      const file = path.join(ROOT, 'bench/results', `${new Date().toISOString().slice(0, 10)}-${kind}.json`)
      const written = { date: new Date().toISOString(), store: kind, machine, durationSeconds: DURATION, connections: CONNECTIONS, rows: result.rows, ...(result.scale ? { scale: result.scale } : {}), notes: result.notes }
      fs.writeFileSync(file, `${JSON.stringify(written, null, 2)}\n`)
      process.stdout.write(`written ${path.relative(ROOT, file)}\n`)
    }
  } finally {
    await store.close()
  }
}
