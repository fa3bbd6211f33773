import assert from 'node:assert/strict'
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { Redis } from 'ioredis'
import { call, createKeyWithCli, type HttpAnswer, killServer, stopServer, waitFor } from '../helpers/processes.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { createPostgresSchema } from '../helpers/stores.js'

/**
 * RATE_LIMIT_PER_SECOND with REDIS_URL (contract section 8): the limit of one API key is shared by
 * every server process using that Redis; without REDIS_URL each process counts on its own.
 *
 * All four processes share one store (a PostgreSQL schema when TEST_DATABASE_URL is set, else one
 * SQLite DATA_DIR), so one key works on each. Keys are made fresh by each run, and the Redis counter
 * is per key id, so parallel runs never share counters.
 */

const LIMIT = 10
const REDIS_URL = 'redis://127.0.0.1:6379'
const pgUrl = process.env.TEST_DATABASE_URL

const redisAnswers = () => spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'ping'], { encoding: 'utf8', timeout: 5_000 }).stdout?.trim() === 'PONG'

/** Fires `count` requests at once with `key`, alternating between the servers. */
async function spread(servers: ServerProcess[], key: string, count: number) {
  const started = performance.now()
  const answers = await Promise.all(Array.from({ length: count }, async (_, i) => {
    const server = servers[i % servers.length]!
    try {
      return { server: i % servers.length, answer: await call(server.url, key, 'GET', '/wishes') }
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause
      throw new Error(`GET /wishes on server ${i % servers.length} failed: ${String(error)} (${String(cause)}); `
        + `exit ${server.child.exitCode ?? server.child.signalCode ?? 'none'}\n${server.output().slice(-3000)}`, { cause: error })
    }
  }))
  return { answers, elapsedMs: performance.now() - started }
}

function tally(answers: { server: number, answer: HttpAnswer }[], servers: number) {
  const unexpected = answers.filter((a) => a.answer.status !== 200 && a.answer.status !== 429)
  assert.deepEqual(unexpected.map((a) => `${a.answer.status} ${a.answer.raw}`), [], 'every answer is 200 or 429')
  for (const { answer } of answers.filter((a) => a.answer.status === 429)) {
    assert.equal(answer.body?.error?.type, 'rate_limit_error', answer.raw)
    assert.equal(answer.body?.error?.code, 'rate_limited', answer.raw)
    assert.match(answer.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
    assert.equal(answer.headers.get('ratelimit-policy'), `"per-key";q=${LIMIT};w=1`)
    assert.match(answer.headers.get('ratelimit') ?? '', /^"per-key";r=0;t=\d+$/)
  }
  for (const { answer } of answers.filter((a) => a.answer.status === 200)) {
    assert.equal(answer.headers.get('ratelimit-policy'), `"per-key";q=${LIMIT};w=1`)
    assert.match(answer.headers.get('ratelimit') ?? '', /^"per-key";r=\d+;t=\d+$/)
  }
  const perServer = Array.from({ length: servers }, (_, s) => answers.filter((a) => a.server === s && a.answer.status === 200).length)
  const ok = perServer.reduce((sum, n) => sum + n, 0)
  return { ok, limited: answers.length - ok, perServer }
}

describe('one rate limit shared by two server processes through Redis', () => {
  let redisChild: ChildProcess | undefined
  let redis: Redis | undefined
  let dataDir: string | undefined
  let schema: Awaited<ReturnType<typeof createPostgresSchema>> | undefined
  const shared: ServerProcess[] = []
  const separate: ServerProcess[] = []
  let storeEnv: Record<string, string> = {}

  before(async () => {
    if (!redisAnswers()) {
      // Not daemonized: this run owns the process and stops it in after().
      redisChild = spawn('redis-server', ['--bind', '127.0.0.1', '--port', '6379', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
      await waitFor(async () => (redisAnswers() ? true : undefined), 10_000, 'redis-server to answer PING')
    }
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
    await redis.connect()

    if (pgUrl) {
      schema = await createPostgresSchema(pgUrl)
      storeEnv = { DATABASE_URL: schema.url }
    } else {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-shared-limit-'))
      storeEnv = { DATA_DIR: dataDir }
    }
    const common = { ...storeEnv, RATE_LIMIT_PER_SECOND: String(LIMIT) }
    // The first migrates the store; then the others start together.
    shared.push(await startServer({ ...common, REDIS_URL }))
    const started = await Promise.allSettled([startServer({ ...common, REDIS_URL }), startServer(common), startServer(common)])
    for (const [i, s] of started.entries()) if (s.status === 'fulfilled') (i === 0 ? shared : separate).push(s.value)
    const failed = started.find((s) => s.status === 'rejected')
    if (failed) throw (failed as PromiseRejectedResult).reason

    // A process whose Redis connection is not up yet fails open (no RateLimit headers): wait until
    // both answer from Redis, with a key of their own.
    const warmUp = (await createKeyWithCli(storeEnv, `warm-up-${Date.now()}`)).key
    for (const server of shared) {
      await waitFor(async () => {
        const res = await call(server.url, warmUp, 'GET', '/wishes')
        return res.headers.get('ratelimit') !== null ? true : undefined
      }, 10_000, 'the server to count requests in Redis', 200)
    }
  })

  after(async () => {
    const all = [...shared, ...separate]
    try {
      await Promise.all(all.map((s) => stopServer(s, 'SIGTERM')))
    } finally {
      for (const s of all) await killServer(s)
      redis?.disconnect()
      await schema?.drop()
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
      if (redisChild && redisChild.exitCode === null) {
        const exited = new Promise((resolve) => redisChild!.once('exit', resolve))
        redisChild.kill('SIGTERM')
        await exited
      }
    }
  })

  test(`with REDIS_URL, one key's requests spread over both processes get at most ${LIMIT} successes a second in total`, async (t) => {
    const { key, id } = await createKeyWithCli(storeEnv, `shared-limit-${Date.now()}`)
    // The store names its counter after the API key's id, under the wishpay-rate-limit: namespace
    // (@fastify/rate-limit puts a route part between them, empty for a limiter made with createRateLimit).
    const counterKeys = () => redis!.keys(`wishpay-rate-limit:*${id}`)
    assert.deepEqual(await counterKeys(), [], 'a fresh key has no counter yet')

    const { answers, elapsedMs } = await spread(shared, key, LIMIT * 3)
    const { ok, limited, perServer } = tally(answers, shared.length)
    t.diagnostic(`200: ${ok} (${perServer.join(' + ')}), 429: ${limited}, in ${Math.round(elapsedMs)} ms`)
    assert.ok(elapsedMs < 900, `the requests fit in one window (${Math.round(elapsedMs)} ms)`)
    assert.ok(ok <= LIMIT, `at most ${LIMIT} successes in total across both processes, got ${ok} (${perServer.join(' + ')})`)
    assert.equal(ok, LIMIT, `exactly the limit is let through (${perServer.join(' + ')})`)
    assert.ok(perServer.every((n) => n > 0), 'both processes let some through (they answered from one counter)')

    // The counter is in Redis under the key's id, and it expires with the window.
    const [counter, ...others] = await counterKeys()
    assert.ok(counter, 'the key has a counter in Redis')
    assert.deepEqual(others, [], 'one counter for the key, whatever the process or route')
    const counted = Number(await redis!.get(counter))
    assert.equal(counted, LIMIT * 3, 'Redis counted every request of both processes')
    const ttl = await redis!.pttl(counter)
    assert.ok(ttl > 0 && ttl <= 1000, `the counter expires within the 1 s window (pttl ${ttl})`)

    // And the next window lets the key through again, on either process.
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    for (const server of shared) {
      const again = await call(server.url, key, 'GET', '/wishes')
      assert.equal(again.status, 200, again.raw)
    }
  })

  test(`without REDIS_URL the same load gets up to ${LIMIT} per process`, async (t) => {
    const { key } = await createKeyWithCli(storeEnv, `separate-limit-${Date.now()}`)
    const { answers, elapsedMs } = await spread(separate, key, LIMIT * 3)
    const { ok, limited, perServer } = tally(answers, separate.length)
    t.diagnostic(`200: ${ok} (${perServer.join(' + ')}), 429: ${limited}, in ${Math.round(elapsedMs)} ms`)
    assert.ok(elapsedMs < 900, `the requests fit in one window (${Math.round(elapsedMs)} ms)`)
    for (const n of perServer) assert.ok(n <= LIMIT, `at most ${LIMIT} per process, got ${perServer.join(' + ')}`)
    assert.deepEqual(perServer, [LIMIT, LIMIT], 'each process counts on its own: the limit per process')
    assert.ok(ok > LIMIT, 'more than one limit in total: nothing is shared')
  })
})
