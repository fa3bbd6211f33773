/**
 * `npx tsx bench/instructions.ts [--store sqlite|postgres] [--scenario get|payments|replay] [--rounds N]
 * [--requests N] [--warmups N] [--top N] [--keep] BUILD[,NAME=VALUE...] ...`: the instructions a request
 * costs each build of the server, counted by valgrind's callgrind (bench/callgrind.ts) on one seeded store.
 *
 * A BUILD is a build's output directory, as for bench/compare-builds.ts (`cp -r dist dist-before`), or
 * `hello`: the hello-world floor (bench/hello-server.ts), which takes variables and `NODE_FLAGS=` as a
 * build does (with none of the server's own flags or variables, which it never had). Round after round,
 * each build is started under callgrind with counting off, warmed up by `--warmups` runs of `--requests`
 * requests each (a run's end closes its 64 connections, which deoptimises some of node's stream code: the
 * runs after it let V8 optimise it again), then counted over one more run. Prints each round's
 * instructions a request (every thread's and JavaScript's thread's) and their medians, and with `--top N`
 * the N functions that cost the most in the last round (`--keep` leaves callgrind's files for
 * callgrind_annotate or kcachegrind).
 *
 * Why: the machine's speed moves by ±10-15 % between runs minutes apart, more than most single changes
 * gain, so bench/compare-builds.ts needs many rounds to tell two builds apart. An instruction count is the
 * same whatever the machine's speed: rounds of one build agree within about 1 % (docs/performance.md,
 * twenty-fifth pass), except that V8's tiering now and then leaves one function on a slower path for a
 * whole round, which the median hides. Run it on an otherwise idle machine all the same: with the test suite running
 * beside it, a GET counted 250k on JavaScript's thread instead of 200k (twenty-eighth pass), since how
 * requests group into turns and batches, and how often the heap is collected, follow the timing. It counts no kernel work and no cache misses, so it is a check on
 * the process's own work, not a replacement for the timed runs. Needs valgrind (`apt-get install valgrind`);
 * a request costs about a hundred times its time under it, so a round takes about half a minute.
 */
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { parseBuilds } from './build-args.js'
import { annotate, type Counts, startCounted, valgrindVersion } from './callgrind.js'
import { requireBenchPostgresUrl } from './postgres-url.js'
import { bodyMaker, MEASURED_ROUTES, measuredScenario, PAYMENT_BODY, primeReplay, replayBody, requestHeaders } from './scenarios.js'
import { seedBasics } from './seed.js'
import { SERVER_NODE_FLAGS } from '../bin/node-flags.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { openStore } from '../test/helpers/stores.js'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    store: { type: 'string', default: 'sqlite' },
    scenario: { type: 'string', default: 'get' },
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '6000' },
    warmups: { type: 'string', default: '3' },
    top: { type: 'string', default: '0' },
    keep: { type: 'boolean', default: false },
  },
})
const { store } = values
const scenario = measuredScenario(values.scenario)
if (store !== 'sqlite' && store !== 'postgres') throw new Error('--store takes sqlite or postgres')
if (positionals.length === 0) throw new Error('name at least one build directory (e.g. dist) or hello')
if (await valgrindVersion() === null) throw new Error('valgrind is not installed (apt-get install valgrind)')
const requests = Number(values.requests)

const builds = parseBuilds(positionals).map((build) => ({ ...build, rounds: [] as Counts[] }))

const opened = store === 'sqlite' ? await openStore('sqlite') : await openStore('postgres', { postgresUrl: requireBenchPostgresUrl(), queryTimeoutMs: 0 })
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
const thousands = (n: number) => `${(n / requests / 1000).toFixed(1)}k`

try {
  await migrateToLatest(opened.db)
  const seed = await seedBasics(opened)
  const makeBody = scenario === 'payments' ? bodyMaker(PAYMENT_BODY, [seed.mandateId]) : null
  const drive = async (url: string) => {
    const result = await autocannon({
      url, connections: 64, amount: requests, timeout: 120,
      requests: [{
        method: scenario === 'get' ? 'GET' : 'POST',
        path: scenario === 'get' ? `/payments/${seed.paymentId}` : '/payments',
        headers: requestHeaders({ key: seed.key }),
        ...(makeBody ? { setupRequest: (request: autocannon.Request) => ({ ...request, body: makeBody() }) } : {}),
        ...(scenario === 'replay' ? { body: replayBody(seed.mandateId) } : {}),
      }],
    })
    const failed = result.errors + result.timeouts + result.non2xx
    if (failed > 0) throw new Error(`${failed} of ${requests} requests failed`)
  }
  for (let round = 1; round <= Number(values.rounds); round++) {
    // The order turns by one each round, so that the tables' growth falls on every build alike.
    for (const build of builds.map((_, i) => builds[(i + round - 1) % builds.length]!)) {
      const server = build.dir === 'hello'
        ? await startCounted([...build.nodeFlags, '--import', 'tsx', 'bench/hello-server.ts'], build.env, 'hello listening')
        : await startCounted([...SERVER_NODE_FLAGS, ...build.nodeFlags, `${build.dir}/cli.js`, 'serve'],
          { PORT: '0', NODE_ENV: 'production', RATE_LIMIT_PER_SECOND: '1000000', ...opened.env, ...build.env }, 'wishpay listening')
      try {
        if (scenario === 'replay') await primeReplay(server.url, seed.key, seed.mandateId)
        for (let i = 0; i < Number(values.warmups); i++) await drive(server.url)
        const counts = await server.measure(() => drive(server.url))
        build.rounds.push(counts)
        process.stderr.write(`round ${round} ${build.name}: ${thousands(counts.all)} instructions a request (${thousands(counts.main)} on JavaScript's thread)\n`)
        if (round === Number(values.rounds) && Number(values.top) > 0) {
          process.stdout.write(`${build.name}, round ${round}: the ${values.top} functions of JavaScript's thread that cost the most, instructions a request\n`)
          for (const row of await annotate(counts.mainFile, server.perfMap, requests, Number(values.top))) {
            process.stdout.write(`${row.perRequest.toFixed(0).padStart(8)} ${(row.share * 100).toFixed(2).padStart(6)} %  ${row.name}\n`)
          }
        }
      } finally {
        await server.stop(values.keep)
      }
    }
  }
} finally {
  const route = MEASURED_ROUTES[scenario]
  process.stdout.write(`${store} ${route}, 64 connections, ${requests} requests counted a round\n`)
  for (const build of builds) {
    if (build.rounds.length === 0) {
      process.stdout.write(`${build.name}: no round measured\n`)
      continue
    }
    const each = build.rounds.map((r) => `${thousands(r.all)}/${thousands(r.main)}`).join(' | ')
    process.stdout.write(`${build.name}: median ${thousands(median(build.rounds.map((r) => r.all)))} instructions a request, ${thousands(median(build.rounds.map((r) => r.main)))} on JavaScript's thread  (${each})\n`)
  }
  await opened.close()
}
