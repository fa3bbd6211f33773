import { randomBytes, randomFillSync, randomInt } from 'node:crypto'

/**
 * Random 32-bit words from the CSPRNG, read from a pooled buffer: one kernel call per 1,024 words, where
 * the ulid package's own source asked the kernel for one byte per character (5 % of a request's CPU).
 */
const pool = new Uint32Array(1024)
let next = pool.length
function pooledWord(): number {
  if (next === pool.length) {
    randomFillSync(pool)
    next = 0
  }
  return pool[next++]!
}

/** Crockford's base32, lowercase: the ULID alphabet as our ids spell it. */
const CROCKFORD = Buffer.from('0123456789abcdefghjkmnpqrstvwxyz', 'latin1')
const TIME_DIGITS = 10
/** The greatest millisecond 48 bits hold (year 10889). */
const MAX_TIME = 2 ** 48 - 1
const RANDOM_DIGITS = 16

/**
 * The state of the monotonic ULIDs: the millisecond of the last id and its 80 random bits, as 16 base32
 * digits. Ids made in the same millisecond (or while the clock stands behind it) take the last one's
 * random part plus one, so they sort in creation order, as the ULID spec's monotonic generators do.
 */
let lastTime = -1
const randomDigits = new Uint8Array(RANDOM_DIGITS)
/** An id's characters are written here and read out as one flat string (prefix, `_`, 26 digits). */
const text = Buffer.alloc(32)

/**
 * Object ids: a type prefix plus a ULID (48-bit millisecond time, 80 random bits) in lowercase Crockford
 * base32. The monotonic rule keeps ids created in the same millisecond in creation order, so "newest
 * first" lists break created_at ties the way a user expects.
 *
 * Encoded here rather than by the ulid package: it builds each id a character at a time, one string
 * concatenation a character, then we lowercased it, in all about 5,900 instructions an id, 2.8 % of a GET's (callgrind,
 * docs/performance.md, twenty-fifth pass); this writes the characters into a buffer and reads them out once,
 * as a flat string (the twentieth pass: node's header check flattens a concatenated one again).
 * test/unit/ids.test.ts holds the encoding to the ulid package's own decoder.
 */
export function newId(prefix: IdPrefix, at?: Date): string {
  const given = at === undefined ? Number.NaN : at.getTime()
  // No date, or one a ULID cannot hold (invalid, negative, past 48 bits): now, as the ulid package did
  // for an invalid one, and never kept as the last time.
  const time = given >= 0 && given <= MAX_TIME ? given : Date.now()
  if (time > lastTime) {
    lastTime = time
    drawRandomDigits()
  } else if (!incrementRandom()) {
    // 80 random bits ran out within one millisecond: the next millisecond keeps the order.
    lastTime++
    drawRandomDigits()
  }
  let end = 0
  for (let i = 0; i < prefix.length; i++) text[end++] = prefix.charCodeAt(i)
  text[end++] = 0x5f // _
  end = writeTime(lastTime, end)
  for (let i = 0; i < RANDOM_DIGITS; i++) text[end++] = CROCKFORD[randomDigits[i]!]!
  return text.toString('latin1', 0, end)
}

/** New random digits: each the top 5 bits of a CSPRNG word. */
function drawRandomDigits(): void {
  for (let i = 0; i < RANDOM_DIGITS; i++) randomDigits[i] = pooledWord() >>> 27
}

/** Adds one to the random digits; false when they were all the greatest digit (they wrap to zero). */
function incrementRandom(): boolean {
  for (let i = RANDOM_DIGITS - 1; i >= 0; i--) {
    if (randomDigits[i]! < 31) {
      randomDigits[i]!++
      return true
    }
    randomDigits[i] = 0
  }
  return false
}

/** Writes the 10 base32 digits of a millisecond time into `text` at `from`; returns where they end. */
function writeTime(ms: number, from: number): number {
  let rest = ms
  for (let i = from + TIME_DIGITS - 1; i >= from; i--) {
    const digit = rest % 32
    text[i] = CROCKFORD[digit]!
    rest = (rest - digit) / 32
  }
  return from + TIME_DIGITS
}

/** The 10 characters of an id that encode millisecond `ms` (what every id of that millisecond starts with after its prefix). */
export function idTimePart(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_TIME) throw new RangeError(`a ULID's time is a whole millisecond from 0 to 2^48 - 1, not ${ms}`)
  return text.toString('latin1', 0, writeTime(ms, 0))
}

export type IdPrefix = 'acct' | 'key' | 'wish' | 'mdt' | 'pay' | 're' | 'evt' | 'we' | 'req' | 'job' | 'wha' | 'agt' | 'tk' | 'vt'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** Uniformly random base62 text from the CSPRNG (randomInt avoids modulo bias). */
export function randomBase62(length: number): string {
  let out = ''
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)]
  return out
}

/** A uniformly random number in [0, 1), from the CSPRNG (what Math.random would give, for jitter). */
export function randomFraction(): number {
  return pooledWord() / 0x1_0000_0000
}

/** A uniformly random integer in [0, n), for spreading writes over slots (not for secrets). */
export function randomIndex(n: number): number {
  return Math.floor((pooledWord() / 0x1_0000_0000) * n)
}

/** A webhook endpoint's signing secret, as Standard Webhooks has it: whsec_ plus base64 of 24 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`
}
