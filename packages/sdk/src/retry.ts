import { ConnectionError } from './errors.js'

/** How requests are retried; `sleep` and `random` are replaceable so tests need not wait or guess. */
export interface RetryPolicy {
  /** Retries after the first attempt (0: never retry). */
  maxRetries: number
  /** Bound on each attempt, from sending to the response's headers. */
  timeoutMs: number
  /** First backoff; it doubles on each retry up to `maxDelayMs`. */
  initialDelayMs: number
  maxDelayMs: number
  /** A `Retry-After` longer than this is not waited for: the answer is returned as it is. */
  maxRetryAfterMs: number
  sleep(ms: number, signal: AbortSignal | null): Promise<void>
  /** A number in [0, 1), for jitter. */
  random(): number
}

export type Fetch = (request: Request) => Promise<Response>

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 2,
  timeoutMs: 30_000,
  initialDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
  sleep: (ms, signal) => new Promise((resolve, reject) => {
    const onAbort = () => { clearTimeout(timer); reject(signal?.reason) }
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve() }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  }),
  random: Math.random,
}

/**
 * A request may be sent again when repeating it cannot do the work twice: GET, HEAD, PUT and DELETE
 * by their HTTP meaning, and any request carrying an Idempotency-Key (the server replays the first
 * answer instead of running it again). A POST without a key is never retried after it may have run.
 */
function safeToRepeat(request: Request): boolean {
  return ['GET', 'HEAD', 'PUT', 'DELETE'].includes(request.method) || request.headers.has('idempotency-key')
}

/** Seconds or an HTTP date, as milliseconds from now; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null): number | undefined {
  if (header === null || header.trim() === '') return undefined
  if (/^\s*\d+\s*$/.test(header)) return Number(header) * 1000
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

/** Whether an answer says "not done, try again": see docs/decisions.md for the policy. */
async function retryableAnswer(request: Request, response: Response): Promise<boolean> {
  // A rate-limited request was refused before anything ran, so even a keyless POST may be sent again.
  if (response.status === 429) return true
  // 409 is retryable only while another request with the same key is still running.
  if (response.status === 409) return (await errorCode(response)) === 'idempotency_key_in_use'
  return response.status >= 500 && safeToRepeat(request)
}

async function errorCode(response: Response): Promise<string | undefined> {
  try {
    const body = await response.clone().json() as { error?: { code?: unknown } }
    return typeof body.error?.code === 'string' ? body.error.code : undefined
  } catch {
    return undefined
  }
}

/** Exponential backoff with equal jitter: half the step fixed, half random, so clients spread out. */
function backoffMs(policy: RetryPolicy, retry: number): number {
  const step = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** retry)
  return step / 2 + policy.random() * (step / 2)
}

/**
 * Wraps `fetch` with the SDK's retries. The same Request (so the same Idempotency-Key) is sent on
 * every attempt; each attempt is bounded by `timeoutMs` and by the caller's own signal. A caller's
 * abort is never retried and is rethrown as it is.
 */
export function retryingFetch(fetch: Fetch, policy: RetryPolicy): Fetch {
  return async (request) => {
    for (let retry = 0; ; retry++) {
      const last = retry >= policy.maxRetries
      const timeout = AbortSignal.timeout(policy.timeoutMs)
      const attempt = new Request(request.clone(), { signal: AbortSignal.any([request.signal, timeout]) })
      let response: Response
      try {
        response = await fetch(attempt)
      } catch (error) {
        if (request.signal.aborted) throw error
        const reason = timeout.aborted ? `no response within ${policy.timeoutMs} ms` : describe(error)
        if (last || !safeToRepeat(request)) {
          throw new ConnectionError(`Could not reach the Wishpay API (${request.method} ${request.url}): ${reason}`, { cause: error })
        }
        await policy.sleep(backoffMs(policy, retry), request.signal)
        continue
      }
      if (last || !(await retryableAnswer(request, response))) return response
      const waitFor = retryAfterMs(response.headers.get('retry-after'))
      if (waitFor !== undefined && waitFor > policy.maxRetryAfterMs) return response
      await response.body?.cancel()
      await policy.sleep(waitFor ?? backoffMs(policy, retry), request.signal)
    }
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : ''
  return `${error.message}${cause}`
}
