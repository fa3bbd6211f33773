import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon, { type Request } from 'autocannon'
import { cpuSeconds } from './proc.js'
import { wrk, type WrkResult } from './wrk.js'

export interface LoadResult {
  requestsPerSecond: number
  p50: number
  p99: number
  errors: number
  requests: number
  /**
   * CPU (user + system) the server's processes used per request of the measured seconds, in µs, when
   * LoadOptions.cpuOf was given. It moves less than req/s with the rest of the machine's load, so a ratio
   * to a floor measured in another minute is better read from it.
   */
  cpuUsPerRequest: number | null
}

/** What both load generators are given, so that autocannon and wrk send the same requests. */
export interface LoadOptions {
  url: string
  path: string
  method?: 'GET' | 'POST'
  key?: string
  /**
   * The JSON body. `__KEY__` in it becomes a key no other request uses, `__MANDATE__` the next of
   * `mandates` (round robin): autocannon here, wrk in bench/wrk.lua.
   */
  body?: string
  mandates?: string[]
  connections: number
  durationSeconds: number
  /** Seconds of the same load first, not measured, so the JIT and caches are warm. */
  warmupSeconds?: number
  /** The processes of the server under load, whose CPU per request is measured (`cpuUsPerRequest`). */
  cpuOf?: () => number[]
}

/** A new payment each request: a new idempotency key, against the given mandates in turn. */
export const PAYMENT_BODY = '{"mandate_id":"__MANDATE__","amount":1,"idempotency_key":"__KEY__"}'

/** The wish of `POST /wishes`: no budget, as in every run since the first, so that the runs compare. */
export const WISH_BODY = '{"query":"a bench wish"}'

/**
 * A wish with a budget: its amount is checked against its currency's minor unit (lib/currency.ts), work
 * WISH_BODY skips; its row shows that work's cost (docs/performance.md, fortieth pass).
 */
export const BUDGETED_WISH_BODY = '{"query":"a bench wish","budget":{"max":199.99,"currency":"usd"}}'

/** The scenarios bench/instructions.ts and bench/compare-builds.ts measure one at a time, by their route as run.ts names it. */
export const MEASURED_ROUTES = { get: 'GET /payments/:id', payments: 'POST /payments', replay: 'POST /payments (replay one key)' } as const
export type MeasuredScenario = keyof typeof MEASURED_ROUTES

/** `--scenario`'s value, checked. */
export function measuredScenario(value: string | undefined): MeasuredScenario {
  if (value === undefined || !Object.hasOwn(MEASURED_ROUTES, value)) throw new Error(`--scenario takes ${Object.keys(MEASURED_ROUTES).join(', ')}`)
  return value as MeasuredScenario
}

/** The replay scenario's body: one key for every request, so all after the first are answered from its record. */
export function replayBody(mandateId: string): string {
  return JSON.stringify({ mandate_id: mandateId, amount: 1, idempotency_key: 'bench-replay' })
}

/**
 * Sends the replay scenario's request once, so that its key has a record before the load starts: while
 * its first request runs, the others under the key are 409 `idempotency_key_in_use`.
 */
export async function primeReplay(url: string, key: string, mandateId: string): Promise<void> {
  const res = await fetch(`${url}/payments`, { method: 'POST', headers: requestHeaders({ key }), body: replayBody(mandateId) })
  if (res.status !== 201) throw new Error(`the replay scenario's first payment answered ${res.status}: ${await res.text()}`)
}

/** Runs autocannon against one route; every non-2xx answer or socket error counts as an error. */
export async function load(options: LoadOptions): Promise<LoadResult> {
  if (options.warmupSeconds) await measure({ ...options, durationSeconds: options.warmupSeconds })
  const before = options.cpuOf ? cpuSeconds(options.cpuOf()) : 0
  const result = await measure(options)
  const used = options.cpuOf ? cpuSeconds(options.cpuOf()) - before : 0
  return { ...result, cpuUsPerRequest: options.cpuOf && result.requests > 0 ? Math.round((used * 1e6) / result.requests) : null }
}

/** The headers every load generator sends: JSON, and the key when there is one. */
export function requestHeaders(options: Pick<LoadOptions, 'key'>): Record<string, string> {
  return { 'content-type': 'application/json', ...(options.key ? { authorization: `Bearer ${options.key}` } : {}) }
}

/** Makes each request's body from LoadOptions' template; null when the template has no per-request part. */
export function bodyMaker(template: string, mandates: readonly string[]): (() => string) | null {
  if (!template.includes('__KEY__') && !template.includes('__MANDATE__')) return null
  let next = 0
  return () => template.replaceAll('__KEY__', randomUUID()).replaceAll('__MANDATE__', mandates[next++ % mandates.length] ?? '')
}

async function measure(options: LoadOptions): Promise<Omit<LoadResult, 'cpuUsPerRequest'>> {
  const headers = requestHeaders(options)
  // A body without a per-request part is sent as is (no work per request in the load generator).
  const makeBody = options.body === undefined ? null : bodyMaker(options.body, options.mandates ?? [])
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationSeconds,
    requests: [{
      method: options.method ?? 'GET',
      path: options.path,
      headers,
      ...(makeBody ? { setupRequest: (request: Request): Request => ({ ...request, body: makeBody() }) } : options.body !== undefined ? { body: options.body } : {}),
    }],
  })
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    requests: result.requests.total,
  }
}

export interface Driven {
  autocannon: LoadResult
  /** null when wrk is not installed. */
  wrk: WrkResult | null
}

/**
 * The same load through autocannon, then through wrk (each with its warm-up), each once `settled`
 * resolves: a scenario whose requests timed out leaves them running in the server, and the next run
 * would measure them.
 */
export async function drive(options: LoadOptions, withWrk: boolean, settled?: () => Promise<void>): Promise<Driven> {
  await settled?.()
  const autocannonResult = await load(options)
  if (!withWrk) return { autocannon: autocannonResult, wrk: null }
  await settled?.()
  return { autocannon: autocannonResult, wrk: await wrk(options) }
}

const SETTLED_MS = 250
/** Long enough for what 4 connections leave (a deep page: seconds); a server that stays slow is measured as it is. */
const SETTLE_LIMIT_MS = 60_000
/** A probe the server leaves unanswered this long counts as slow, and the next one is sent. */
const PROBE_TIMEOUT_MS = 2_000

/**
 * Resolves once a request to `path` (a cheap read through the database) is answered within 250 ms: the
 * server is then no longer busy with what earlier requests left queued (requests keep running after the
 * load generator gave up on them). After a minute it says so on stderr and resolves, so that the run goes
 * on; a server that refuses the connection has stopped, and the bench fails.
 */
export async function settle(url: string, key: string, path: string): Promise<void> {
  const deadline = Date.now() + SETTLE_LIMIT_MS
  while (Date.now() < deadline) {
    const started = Date.now()
    try {
      const answer = await fetch(new URL(path, url), { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
      await answer.arrayBuffer()
      if (answer.ok && Date.now() - started < SETTLED_MS) return
    } catch (error) {
      if ((error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED') throw new Error(`the server at ${url} refuses connections`, { cause: error })
      // A timeout or a reset: still busy.
    }
    await sleep(SETTLED_MS)
  }
  process.stderr.write(`settle: ${url} still answers ${path} slower than ${SETTLED_MS} ms after ${SETTLE_LIMIT_MS / 1000} s; measuring anyway\n`)
}
