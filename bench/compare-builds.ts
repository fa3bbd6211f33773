/**
 * `npx tsx bench/compare-builds.ts [--store sqlite|postgres] [--scenario get|payments|replay] [--rounds N]
 * [--seconds N] DIR[,NAME=VALUE...] ...`: compiled builds of the server side by side, on one seeded store.
 * Each DIR is a build's output (a copy of dist/ inside this checkout, such as `cp -r dist dist-before`, so
 * that it finds node_modules), with environment variables of its own after commas if any (`NODE_FLAGS=`
 * gives node flags instead, bench/build-args.ts: `dist,NODE_FLAGS=--maglev`). Round after
 * round, each build is started as the bench starts it (`node <flags> DIR/cli.js serve`), driven by wrk at
 * 64 connections (3 s of warm-up, then N seconds measured) and stopped; the order of the builds turns by
 * one each round, so that the machine's drift, and on `payments` the tables' growth, falls on every build
 * alike. Prints, per build, each round's req/s, the server's CPU a request (from /proc), on PostgreSQL
 * also PostgreSQL's (the server's backends and the background processes, proc.ts postgresPids; none when
 * PostgreSQL is not on this machine), and wrk's p99, then the median of each, also when a round fails.
 *
 * On this machine a build's CPU a request moves by ±10-15 % between runs minutes apart (docs/performance.md),
 * more than most single changes gain: only a difference that holds in most rounds means anything. Needs
 * wrk; PostgreSQL from BENCH_DATABASE_URL or TEST_DATABASE_URL. The store is a new temporary one, migrated
 * by this checkout: a build that lacks one of its migrations refuses to start. No results file is written.
 */
import { parseArgs } from 'node:util'
import { parseBuilds } from './build-args.js'
import pg from 'pg'
import { cpuSeconds, postgresPids } from './proc.js'
import { startWishpay } from './processes.js'
import { requireBenchPostgresUrl } from './postgres-url.js'
import { MEASURED_ROUTES, measuredScenario, PAYMENT_BODY, primeReplay, replayBody } from './scenarios.js'
import { seedBasics } from './seed.js'
import { wrk, wrkVersion } from './wrk.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { openStore } from '../test/helpers/stores.js'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    store: { type: 'string', default: 'postgres' },
    scenario: { type: 'string', default: 'get' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '6' },
  },
})
const store = values.store
const scenario = measuredScenario(values.scenario)
if (store !== 'sqlite' && store !== 'postgres') throw new Error('--store takes sqlite or postgres')
if (positionals.length === 0) throw new Error('name at least one build directory (e.g. `cp -r dist dist-before`)')
if (await wrkVersion() === null) throw new Error('wrk is not installed (apt-get install wrk)')

const builds = parseBuilds(positionals).map((build) => ({ ...build, runs: [] as Array<{ perSecond: number, cpuUs: number, postgresCpuUs: number | null, p99: number }> }))

const opened = store === 'sqlite' ? await openStore('sqlite') : await openStore('postgres', { postgresUrl: requireBenchPostgresUrl(), queryTimeoutMs: 0 })
/** PostgreSQL: the server's connections are named, so that its backends' CPU is counted (proc.ts postgresPids). */
const applicationName = `wishpay-compare-${process.pid}`
const serverEnv: Record<string, string> = { ...opened.env }
let client: pg.Client | undefined
if (opened.name === 'postgres') {
  const url = new URL(opened.env.DATABASE_URL!)
  url.searchParams.set('application_name', applicationName)
  serverEnv.DATABASE_URL = url.toString()
  client = new pg.Client({ connectionString: opened.postgres.url })
  await client.connect()
}
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const middle = sorted.length / 2
  return sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : Math.round(((sorted[middle - 1]! + sorted[middle]!) / 2) * 10) / 10
}

function printSummary(): void {
  const route = MEASURED_ROUTES[scenario]
  process.stdout.write(`${store} ${route}, wrk -t2 -c64, ${values.seconds} s a round\n`)
  for (const build of builds) {
    if (build.runs.length === 0) {
      process.stdout.write(`${build.name}: no round measured\n`)
      continue
    }
    const pgUs = (r: { postgresCpuUs: number | null }) => (r.postgresCpuUs === null ? '' : ` pg ${r.postgresCpuUs} µs`)
    const rounds = build.runs.map((r) => `${r.perSecond} req/s ${r.cpuUs} µs${pgUs(r)} p99 ${r.p99}`).join(' | ')
    const pgMedian = build.runs[0]!.postgresCpuUs === null ? '' : `, PostgreSQL ${median(build.runs.map((r) => r.postgresCpuUs!))} µs`
    process.stdout.write(`${build.name}: median ${median(build.runs.map((r) => r.perSecond))} req/s, ${median(build.runs.map((r) => r.cpuUs))} µs a request${pgMedian}, p99 ${median(build.runs.map((r) => r.p99))} ms  (${rounds})\n`)
  }
}
try {
  await migrateToLatest(opened.db)
  const seed = await seedBasics(opened)
  const request = scenario === 'get'
    ? { path: `/payments/${seed.paymentId}` }
    : { path: '/payments', method: 'POST' as const, body: scenario === 'replay' ? replayBody(seed.mandateId) : PAYMENT_BODY, mandates: [seed.mandateId] }
  for (let round = 1; round <= Number(values.rounds); round++) {
    const turned = builds.map((_, i) => builds[(i + round - 1) % builds.length]!)
    for (const build of turned) {
      const server = await startWishpay({ ...serverEnv, ...build.env }, { build: build.dir, nodeFlags: build.nodeFlags })
      try {
        const load = { url: server.url, key: seed.key, connections: 64, warmupSeconds: 0, ...request }
        if (scenario === 'replay') await primeReplay(server.url, seed.key, seed.mandateId)
        await wrk({ ...load, durationSeconds: 3 })
        const pgPids = client ? await postgresPids(client, applicationName) : []
        const before = cpuSeconds(server.pids())
        const pgBefore = cpuSeconds(pgPids)
        const measured = await wrk({ ...load, durationSeconds: Number(values.seconds) })
        const cpuUs = ((cpuSeconds(server.pids()) - before) * 1e6) / measured.requests
        const postgresCpuUs = pgPids.length === 0 ? null : Math.round(((cpuSeconds(pgPids) - pgBefore) * 1e7) / measured.requests) / 10
        if (measured.errors > 0) process.stderr.write(`${build.name}: ${measured.errors} errors in round ${round}\n`)
        build.runs.push({ perSecond: Math.round(measured.requestsPerSecond), cpuUs: Math.round(cpuUs * 10) / 10, postgresCpuUs, p99: measured.p99 })
        process.stderr.write(`round ${round} ${build.name}: ${build.runs.at(-1)!.perSecond} req/s, ${build.runs.at(-1)!.cpuUs} µs, ${postgresCpuUs === null ? '' : `PostgreSQL ${postgresCpuUs} µs, `}p99 ${measured.p99} ms\n`)
      } finally {
        await server.stop()
      }
    }
  }
} finally {
  printSummary()
  await client?.end()
  await opened.close()
}
