/** The one source of time. Services take a Clock so tests can move time without sleeping. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

// The last millisecond formatted: a write formats the same `now` several times (its rows' created_at,
// updated_at, the idempotency record's), at about 0.3 µs a call (docs/performance.md, twenty-third pass).
let lastMs = Number.NaN
let lastText = ''

/** ISO 8601 UTC with milliseconds, the only timestamp format stored and returned. */
export function toTimestamp(date: Date): string {
  const ms = date.getTime()
  // An invalid date (NaN) never matches, so toISOString throws its RangeError as before.
  if (ms !== lastMs) {
    lastText = date.toISOString()
    lastMs = ms
  }
  return lastText
}
