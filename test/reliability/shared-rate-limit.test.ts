import assert from 'node:assert/strict'
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { Redis } from 'ioredis'
import { call, createKeyWithCli, killServer, stopServer, waitFor } from '../helpers/processes.js'
import { header, type Response } from '../helpers/response.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * RATE_LIMIT_PER_SECOND with REDIS_URL (contract section 8): the limit of one API key is shared by
 * every server process using that Redis; without REDIS_URL each process counts on its own.
 *
 * All four processes share one store (a PostgreSQL schema when TEST_DATABASE_URL is set, else one
 * SQLite DATA_DIR), so one key works on each. Keys are made fresh by each run, and the Redis counter
 * is per key id, so parallel runs never share counters.
 *
 * Nothing here assumes how fast a loaded machine sends or serves requests. Windows are told apart by
 * the servers' own RateLimit header: in one window of one count, each answer leaves one request less
 * than the answer before, a new window starts again at r = LIMIT - 1, and a 429 comes only after an
 * answer that left nothing. The concurrent burst runs in a window the test opens itself in Redis, ten
 * minutes long. Waits are on conditions, with bounds that only matter when something is broken.
 */

const LIMIT = 10
const POLICY = `"per-key";q=${LIMIT};w=1`
const RATE_LIMIT = /^"per-key";r=(\d+);t=(\d+)$/
const REDIS_URL = 'redis://127.0.0.1:6379'
const pgUrl = process.env.TEST_DATABASE_URL
/** Four servers start on a machine that may be busy with other suites: generous, it only bounds a failure. */
const START_TIMEOUT_MS = 120_000

const redisAnswers = () => spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'ping'], { encoding: 'utf8', timeout: 5_000 }).stdout?.trim() === 'PONG'

interface Answer { server: number, answer: Response }

async function get(servers: ServerProcess[], i: number, key: string): Promise<Answer> {
  const server = servers[i]!
  try {
    return { server: i, answer: await call(server.url, key, 'GET', '/wishes') }
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause
    throw new Error(`GET /wishes on server ${i} failed: ${String(error)} (${String(cause)}); `
      + `exit ${server.child.exitCode ?? server.child.signalCode ?? 'none'}\n${server.output().slice(-3000)}`, { cause: error })
  }
}

/**
 * What an answer says is left in its window; checks the answer's status, envelope and headers. `t` is
 * at most `windowSeconds` (1, but the burst test opens a longer window itself).
 */
function remaining({ answer }: Answer, windowSeconds = 1): number {
  assert.ok(answer.status === 200 || answer.status === 429, `every answer is 200 or 429: ${answer.status} ${answer.raw}`)
  assert.equal(header(answer, 'ratelimit-policy'), POLICY, answer.raw)
  const match = RATE_LIMIT.exec(header(answer, 'ratelimit') ?? '')
  assert.ok(match, `RateLimit header: ${header(answer, 'ratelimit')}`)
  const t = Number(match[2])
  assert.ok(t >= 1 && t <= windowSeconds, `t is the seconds left in the window: ${t}`)
  if (answer.status === 429) {
    assert.equal(answer.body?.error?.type, 'rate_limit_error', answer.raw)
    assert.equal(answer.body?.error?.code, 'rate_limited', answer.raw)
    assert.match(header(answer, 'retry-after') ?? '', /^[1-9]\d*$/)
    assert.equal(Number(match[1]), 0)
  }
  return Number(match[1])
}

/**
 * Checks a sequence of answers, in the order they were sent, against one count: each 200 leaves one
 * request less than the answer before unless it opens a new window, and a 429 follows only an answer
 * that left nothing. Answers of different servers interleaved must still make one sequence. `left` is
 * what the answer just before these said was left, when there was one.
 */
function assertOneCount(answers: Answer[], what: string, left = LIMIT): void {
  let previous = left
  for (const [i, a] of answers.entries()) {
    const r = remaining(a)
    const where = `${what}, answer ${i + 1} (server ${a.server}): ${answers.map((x) => `${x.server}:${x.answer.status}`).join(' ')}`
    if (a.answer.status === 429) {
      assert.equal(previous, 0, `429 only once the window is used up; ${where}`)
    } else if (r !== LIMIT - 1) {
      assert.equal(r, previous - 1, `one request less left than the answer before; ${where}`)
    }
    previous = r
  }
}

/** Sends to `order(i)` one request at a time until `done` holds; every answer in sending order. */
async function sequence(servers: ServerProcess[], key: string, order: (i: number) => number, done: (answers: Answer[]) => boolean): Promise<Answer[]> {
  const answers: Answer[] = []
  for (let i = 0; i < LIMIT * 20 && !done(answers); i++) answers.push(await get(servers, order(i), key))
  assert.ok(done(answers), `not done after ${answers.length} requests: ${answers.map((x) => `${x.server}:${x.answer.status}`).join(' ')}`)
  return answers
}

/** Waits until `server` lets `key` through again (its window has ended); returns that answer. */
function untilAllowed(servers: ServerProcess[], server: number, key: string): Promise<Answer> {
  return waitFor(async () => {
    const a = await get(servers, server, key)
    return a.answer.status === 200 ? a : undefined
  }, 30_000, `server ${server} to let the key through again`, 50)
}

describe('one rate limit shared by two server processes through Redis', () => {
  let redisChild: ChildProcess | undefined
  let redis: Redis | undefined
  let store: TestStore | undefined
  const shared: ServerProcess[] = []
  const separate: ServerProcess[] = []
  let storeEnv: Record<string, string> = {}
  /** The Redis key of an API key's counter is this prefix and the API key's id. */
  let counterPrefix = ''

  before(async () => {
    if (!redisAnswers()) {
      // Not daemonized: this run owns the process and stops it in after().
      redisChild = spawn('redis-server', ['--bind', '127.0.0.1', '--port', '6379', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
      await waitFor(async () => (redisAnswers() ? true : undefined), 30_000, 'redis-server to answer PING')
    }
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
    await redis.connect()

    store = await openStore(pgUrl ? 'postgres' : 'sqlite')
    storeEnv = store.env
    const common = { ...storeEnv, RATE_LIMIT_PER_SECOND: String(LIMIT) }
    // The first migrates the store; then the others start together.
    shared.push(await startServer({ ...common, REDIS_URL }, START_TIMEOUT_MS))
    const started = await Promise.allSettled([
      startServer({ ...common, REDIS_URL }, START_TIMEOUT_MS), startServer(common, START_TIMEOUT_MS), startServer(common, START_TIMEOUT_MS),
    ])
    for (const [i, s] of started.entries()) if (s.status === 'fulfilled') (i === 0 ? shared : separate).push(s.value)
    const failed = started.find((s) => s.status === 'rejected')
    if (failed) throw (failed as PromiseRejectedResult).reason

    // A process whose Redis connection is not up yet fails open (no RateLimit headers): wait until
    // both answer from Redis, with a key of their own. Its counter shows where counters are kept.
    const warmUp = await createKeyWithCli(storeEnv, `warm-up-${Date.now()}`)
    for (const server of shared) {
      await waitFor(async () => {
        const res = await call(server.url, warmUp.key, 'GET', '/wishes')
        return header(res, 'ratelimit') !== undefined ? true : undefined
      }, 60_000, 'the server to count requests in Redis', 200)
    }
    // The counter lives for one window only: ask until one is seen.
    const counter = await waitFor(async () => {
      await call(shared[0]!.url, warmUp.key, 'GET', '/wishes')
      const [found] = await redis!.keys(`wishpay-rate-limit:*${warmUp.id}`)
      return found
    }, 60_000, 'the warm-up key to have a counter in Redis', 10)
    counterPrefix = counter.slice(0, -warmUp.id.length)
  }, { timeout: 4 * START_TIMEOUT_MS })

  after(async () => {
    const all = [...shared, ...separate]
    try {
      await Promise.all(all.map((s) => stopServer(s, 'SIGTERM')))
    } finally {
      for (const s of all) await killServer(s)
      redis?.disconnect()
      await store?.close()
      if (redisChild && redisChild.exitCode === null) {
        const exited = new Promise((resolve) => redisChild!.once('exit', resolve))
        redisChild.kill('SIGTERM')
        await exited
      }
    }
  })

  test(`with REDIS_URL, requests of one key taking turns between both processes make one count: ${LIMIT} a window`, async (t) => {
    const { key, id } = await createKeyWithCli(storeEnv, `shared-turns-${Date.now()}`)
    assert.deepEqual(await redis!.keys(`${counterPrefix}${id}`), [], 'a fresh key has no counter yet')

    // Taking turns until each process has refused one: a 429 from both.
    const answers = await sequence(shared, key, (i) => i % 2, (all) => [0, 1].every((s) => all.some((a) => a.server === s && a.answer.status === 429)))
    t.diagnostic(answers.map((a) => `${a.server}:${a.answer.status}/${remaining(a)}`).join(' '))
    assertOneCount(answers, 'shared')
    assert.equal(remaining(answers[0]!), LIMIT - 1, 'a new key starts with the whole allowance')

    // The counter is in Redis under the key's id and lives one second at most; then both processes let
    // the key through again, in a new window.
    const ttl = await redis!.pttl(`${counterPrefix}${id}`)
    assert.ok(ttl <= 1000, `the counter expires within the 1 s window (pttl ${ttl}; -2 once it has)`)
    const first = await untilAllowed(shared, 0, key)
    assert.equal(remaining(first), LIMIT - 1, 'a new window with the whole allowance')
    assertOneCount([first, await untilAllowed(shared, 1, key)], 'after the window', LIMIT)
  })

  test(`with REDIS_URL, ${LIMIT * 3} requests at once over both processes in one window: exactly the limit is let through`, async (t) => {
    // A request whose Redis command outlives the client's timeout (a busy machine can stall a process for
    // that long) is let through without a RateLimit header: the limit fails open, by design (the fail-open
    // test covers it). Such a burst says nothing about the shared count, so it is run again with a new key.
    for (let attempt = 1; ; attempt++) {
      const { key, id } = await createKeyWithCli(storeEnv, `shared-burst-${Date.now()}`)
      // The window is opened by the test, ten minutes long, with one request counted, so the whole burst
      // falls in it however slowly it is served: the store sets a counter's expiry on its first request
      // only, and here every request of the servers is a later one.
      const counter = `${counterPrefix}${id}`
      assert.equal(await redis!.set(counter, 1, 'PX', 600_000, 'NX'), 'OK')

      const answers = await Promise.all(Array.from({ length: LIMIT * 3 }, (_, i) => get(shared, i % 2, key)))
      const failedOpen = answers.filter((a) => a.answer.status === 200 && header(a.answer, 'ratelimit') === undefined)
      if (failedOpen.length > 0) {
        await redis!.del(counter)
        t.diagnostic(`attempt ${attempt}: ${failedOpen.length} answers let through as the store failed (slow Redis answers)`)
        assert.ok(attempt < 5, 'the servers reached Redis in time for one burst in five')
        continue
      }
      const ok = answers.filter((a) => a.answer.status === 200)
      const perServer = [0, 1].map((s) => ok.filter((a) => a.server === s).length)
      t.diagnostic(`200: ${ok.length} (${perServer.join(' + ')}), 429: ${answers.length - ok.length}`)
      assert.equal(ok.length, LIMIT - 1, `the ${LIMIT - 1} places left in the window, across both processes (${perServer.join(' + ')})`)
      // One count: every place was given once, whichever process gave it.
      const left = (a: Answer) => remaining(a, 600)
      assert.deepEqual(ok.map(left).sort((a, b) => a - b), Array.from({ length: LIMIT - 1 }, (_, i) => i))
      for (const a of answers) left(a)

      assert.equal(Number(await redis!.get(counter)), LIMIT * 3 + 1, 'Redis counted every request of both processes')
      assert.ok(await redis!.pttl(counter) > 1000, 'the servers kept the window the test opened')
      await redis!.del(counter)
      return
    }
  })

  test(`without REDIS_URL each process counts on its own: ${LIMIT} a window per process`, async (t) => {
    const { key } = await createKeyWithCli(storeEnv, `separate-limit-${Date.now()}`)
    // Process 0 alone until it refuses the key; then process 1 serves it, and process 0 still refuses
    // it. With one count that is impossible: process 1's 200 would mean a new window had begun, in which
    // process 0 could not have refused after one request. If process 0's window ends in between, again.
    let evidence: Answer[] | undefined
    // What process 0's last answer left: a round after the first goes on in that window, if it lasts.
    let leftOn0 = LIMIT
    for (let round = 0; round < 5 && !evidence; round++) {
      const alone = await sequence(separate, key, () => 0, (all) => all.at(-1)?.answer.status === 429)
      assertOneCount(alone, 'process 0 alone', leftOn0)
      const other = await get(separate, 1, key)
      const again = await get(separate, 0, key)
      leftOn0 = remaining(again)
      t.diagnostic(`round ${round + 1}: process 1 ${other.answer.status}, then process 0 ${again.answer.status}`)
      if (other.answer.status === 200 && again.answer.status === 429) evidence = [other, again]
    }
    assert.ok(evidence, 'process 1 served a key that process 0 refused before and after')
    for (const a of evidence) remaining(a)

    // And process 1 has a whole allowance of its own.
    const ones = await sequence(separate, key, () => 1, (all) => all.at(-1)?.answer.status === 429)
    assertOneCount(ones, 'process 1', remaining(evidence[0]!))
  })
})
