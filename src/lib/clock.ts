/** The one source of time. Services take a Clock so tests can move time without sleeping. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

// Timestamps are formatted from their minute's text, made once by toISOString: V8 formats a date through
// printf, about 7,000 instructions a call, and a payment formats five (its rows' times, the idempotency
// record's created_at and expires_at a day later). Two minutes are kept, so that one a day ahead does not
// push out the present one. The seconds and milliseconds are written into the minute's bytes and the text
// read out as one flat string, as lib/ids.ts does: a string joined by `+` is a tree of pieces, larger on
// the heap (docs/performance.md, twenty-third and twenty-seventh passes).
const MINUTE_MS = 60_000
/** `ss.sssZ`: what follows the minute in toISOString's text, whatever the year's form (four digits, or ±six). */
const SECONDS_LENGTH = 7

interface Minute {
  minute: number
  /** The minute's text, then room for its seconds. */
  bytes: Buffer
  /** Where the seconds start. */
  at: number
}

const minutes: Minute[] = [0, 1].map(() => ({ minute: Number.NaN, bytes: Buffer.alloc(40), at: 0 }))
let older = 0
let lastMs = Number.NaN
let lastText = ''

const DIGIT_0 = 0x30

/** ISO 8601 UTC with milliseconds, the only timestamp format stored and returned. */
export function toTimestamp(date: Date): string {
  const ms = date.getTime()
  // A write formats its one `now` several times: the same text again.
  if (ms === lastMs) return lastText
  // An invalid date (NaN) has no minute: toISOString throws its RangeError.
  if (Number.isNaN(ms)) return date.toISOString()
  const minute = Math.floor(ms / MINUTE_MS)
  let slot = minutes[0]!.minute === minute ? minutes[0]! : minutes[1]!.minute === minute ? minutes[1]! : undefined
  if (slot === undefined) {
    slot = minutes[older]!
    older = 1 - older
    const text = new Date(minute * MINUTE_MS).toISOString()
    slot.minute = minute
    slot.at = slot.bytes.write(text, 'latin1') - SECONDS_LENGTH
  }
  const within = ms - minute * MINUTE_MS
  const seconds = Math.floor(within / 1000)
  const millis = within - seconds * 1000
  const { bytes, at } = slot
  bytes[at] = DIGIT_0 + Math.floor(seconds / 10)
  bytes[at + 1] = DIGIT_0 + (seconds % 10)
  bytes[at + 3] = DIGIT_0 + Math.floor(millis / 100)
  bytes[at + 4] = DIGIT_0 + (Math.floor(millis / 10) % 10)
  bytes[at + 5] = DIGIT_0 + (millis % 10)
  lastMs = ms
  return lastText = bytes.toString('latin1', 0, at + SECONDS_LENGTH)
}
