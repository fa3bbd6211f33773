/** The one source of time. Services take a Clock so tests can move time without sleeping. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** ISO 8601 UTC with milliseconds, the only timestamp format stored and returned. */
export function toTimestamp(date: Date): string {
  return date.toISOString()
}
