import rateLimit from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify'
import type { Redis } from 'ioredis'
import ipaddr from 'ipaddr.js'
import { LRUCache } from 'lru-cache'
import { errors } from '../lib/errors.js'

export interface RateLimitDeps {
  perSecond: number
  /** redis:// URL: the limit is shared by every process using it. Otherwise it is per process. */
  redisUrl: string | undefined
  logger: FastifyBaseLogger
}

const POLICY = 'per-key'
const WINDOW_MS = 1000
const WARN_EVERY_MS = 60_000
/** Keys (or addresses) whose per-process window is kept, as @fastify/rate-limit's local store keeps 5,000. */
const LOCAL_WINDOWS_MAX = 10_000

/** Failed authentications one client address may make in a window before they are answered 429. */
export const AUTH_FAILURES_PER_WINDOW = 20
export const AUTH_FAILURE_WINDOW_SECONDS = 60
const AUTH_POLICY = 'auth-failures'

/**
 * Counts a failed authentication (a key that is malformed, unknown or revoked) against the client's
 * address and sets the RateLimit headers of the answer. Returns the seconds until the address's window
 * ends when it has gone over the limit (the answer is then a 429), else undefined (a 401).
 */
export type AuthFailureCounter = (request: FastifyRequest, reply: FastifyReply) => Promise<number | undefined>

declare module 'fastify' {
  interface FastifyInstance {
    /** Set by registerRateLimit; used by the authentication hook (http/auth.ts). */
    countAuthFailure?: AuthFailureCounter
  }
}

/**
 * The address failures are counted against: an IPv4 address (also when it arrives IPv4-mapped), or the
 * /64 an IPv6 address belongs to, since one IPv6 host usually has a whole /64 to choose from.
 */
export function clientAddress(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip
  const address = ipaddr.process(ip)
  if (address.kind() === 'ipv4') return address.toString()
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/64`).toString()}/64`
}

/** Logs at most one warning a minute, however often the store fails. */
function throttledWarning(logger: FastifyBaseLogger) {
  let last = 0
  return (error: unknown, message: string) => {
    const now = Date.now()
    if (now - last < WARN_EVERY_MS) return
    last = now
    logger.warn({ err: error }, message)
  }
}

/**
 * A Redis client that never queues commands while disconnected, so an unreachable Redis costs each
 * request a quick error (and the request goes on) rather than a wait.
 */
async function createRedis(url: string, warn: ReturnType<typeof throttledWarning>): Promise<Redis> {
  // ioredis (about 10 MB of RSS) is loaded only when REDIS_URL is set.
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    commandTimeout: 250,
    lazyConnect: true,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  })
  redis.on('error', (error) => warn(error, 'Redis is unreachable: rate limits are not enforced until it returns'))
  // Connected before the first request, so no request meets a client that is still connecting. If Redis
  // is down now, the client keeps reconnecting in the background and requests flow meanwhile.
  await redis.connect().catch(() => {})
  return redis
}

/**
 * Per-API-key rate limiting (RATE_LIMIT_PER_SECOND) with @fastify/rate-limit's stores. Every API answer
 * carries the IETF draft's RateLimit-Policy and RateLimit headers; over the limit the answer is the
 * contract's 429 `rate_limited` with Retry-After. If the store fails (Redis down) requests flow: the
 * limit fails open and a warning is logged once a minute.
 *
 * Also counts failed authentications per client address in the same store (AUTH_FAILURES_PER_WINDOW
 * per AUTH_FAILURE_WINDOW_SECONDS), through `app.countAuthFailure`, which the authentication hook calls.
 *
 * Returns the hook to add after authentication in the API scope.
 */
export async function registerRateLimit(app: FastifyInstance, deps: RateLimitDeps): Promise<onRequestAsyncHookHandler | onRequestHookHandler> {
  const warn = throttledWarning(deps.logger)
  const redis = deps.redisUrl ? await createRedis(deps.redisUrl, warn) : undefined
  await app.register(rateLimit, {
    global: false,
    max: deps.perSecond,
    timeWindow: 1000,
    skipOnError: false,
    nameSpace: 'wishpay-rate-limit:',
    ...(redis ? { redis } : {}),
  })
  if (redis) app.addHook('onClose', async () => { redis.disconnect() })

  const limiter = app.createRateLimit({ keyGenerator: (request) => request.principal?.keyId ?? request.ip })
  const policy = `"${POLICY}";q=${deps.perSecond};w=1`

  // Failed authentications per client address, in the same store (Redis when configured), under keys of
  // their own. Only failures are counted, so the common request pays nothing for this.
  const failures = app.createRateLimit({
    max: AUTH_FAILURES_PER_WINDOW,
    timeWindow: AUTH_FAILURE_WINDOW_SECONDS * 1000,
    keyGenerator: (request) => `${AUTH_POLICY}:${clientAddress(request.ip)}`,
  })
  const failurePolicy = `"${AUTH_POLICY}";q=${AUTH_FAILURES_PER_WINDOW};w=${AUTH_FAILURE_WINDOW_SECONDS}`
  const countAuthFailure: AuthFailureCounter = async (request, reply) => {
    let result: Awaited<ReturnType<typeof failures>>
    try {
      result = await failures(request)
    } catch (error) {
      warn(error, 'The rate-limit store failed: failed authentications are not counted')
      return undefined
    }
    if (result.isAllowed) return undefined
    const reset = Math.max(1, result.ttlInSeconds)
    reply.header('ratelimit-policy', failurePolicy)
    reply.header('ratelimit', `"${AUTH_POLICY}";r=${result.remaining};t=${reset}`)
    return result.isExceeded ? reset : undefined
  }
  app.decorate('countAuthFailure', countAuthFailure)

  if (!redis) return localLimit(deps.perSecond, policy)
  const limit: onRequestAsyncHookHandler = async (request, reply) => {
    let result: Awaited<ReturnType<typeof limiter>>
    try {
      result = await limiter(request)
    } catch (error) {
      warn(error, 'The rate-limit store failed: requests are let through')
      return
    }
    if (result.isAllowed) return
    const reset = Math.max(1, result.ttlInSeconds)
    reply.header('ratelimit-policy', policy)
    reply.header('ratelimit', `"${POLICY}";r=${result.remaining};t=${reset}`)
    if (result.isExceeded) throw errors.rateLimited(reset)
  }
  return limit
}

interface Window {
  count: number
  startedAt: number
}

// lru-cache's get() allocates an options object when none is passed; this one is reused.
const GET_OPTIONS = {}

/**
 * The per-key limit without Redis: the same fixed 1 s window per key as @fastify/rate-limit's local store
 * (it starts at a key's first request and counts until it is a second old), kept synchronously, so the
 * common request pays for no promise, no result object and no new window object. The RateLimit header
 * values are made once per remaining count (t is always 1 in a 1 s window).
 */
function localLimit(perSecond: number, policy: string): onRequestHookHandler {
  const windows = new LRUCache<string, Window>({ max: LOCAL_WINDOWS_MAX })
  const headers: string[] = []
  const header = (remaining: number): string =>
    remaining < 1024 ? (headers[remaining] ??= `"${POLICY}";r=${remaining};t=1`) : `"${POLICY}";r=${remaining};t=1`
  return (request, reply, done) => {
    const key = request.principal?.keyId ?? request.ip
    const now = Date.now()
    let window = windows.get(key, GET_OPTIONS)
    if (window === undefined) {
      window = { count: 0, startedAt: now }
      windows.set(key, window)
    } else if (window.startedAt + WINDOW_MS <= now) {
      window.count = 0
      window.startedAt = now
    }
    window.count++
    // Lower case, as Fastify sends them, for the reason in request-context.ts setResponseHeaders.
    reply.header('ratelimit-policy', policy)
    reply.header('ratelimit', header(Math.max(0, perSecond - window.count)))
    if (window.count > perSecond) return done(errors.rateLimited(1))
    done()
  }
}
