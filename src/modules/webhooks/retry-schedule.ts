import { randomFraction } from '../../lib/ids.js'

/**
 * Waits after each failed attempt: 5 s, 5 min, 30 min, 2 h, 5 h, then 10 h seven times, about 3.2 days
 * in all (Stripe retries for up to 3 days). WEBHOOK_RETRY_SCALE multiplies it (tests use a tiny scale).
 */
const SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000, 36_000, 36_000, 36_000, 36_000, 36_000]
const MAX_RETRY_AFTER_SECONDS = 24 * 3600

/**
 * Milliseconds to wait after failed attempt number `attempt` (1-based), or undefined when it was the
 * last. The schedule applies with +-10 % jitter, so retries of many deliveries do not arrive in step. A
 * receiver's Retry-After (429, 503) is a floor, up to a day: never sooner than it asks, and never so
 * soon that a short Retry-After burns through the attempts.
 */
export function retryDelayMs(attempt: number, scale: number, retryAfterSeconds: number | null, random: () => number = randomFraction): number | undefined {
  const base = SCHEDULE_SECONDS[attempt - 1]
  if (base === undefined) return undefined
  const scheduled = Math.round(base * 1000 * scale * (0.9 + 0.2 * random()))
  if (retryAfterSeconds === null) return scheduled
  return Math.max(scheduled, Math.min(retryAfterSeconds, MAX_RETRY_AFTER_SECONDS) * 1000)
}

export const MAX_ATTEMPTS = SCHEDULE_SECONDS.length + 1

/** Retry-After as seconds: a number of seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (value === undefined) return null
  if (/^\d+$/.test(value.trim())) return Number(value.trim())
  const at = Date.parse(value)
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now.getTime()) / 1000))
}
