import { randomBytes, randomFillSync, randomInt } from 'node:crypto'
import { monotonicFactory } from 'ulid'

/**
 * Random numbers in [0, 1) from the CSPRNG, read from a pooled buffer: the ulid package's own source
 * asks the kernel for one byte per character, which showed as 5 % of a request's CPU.
 */
const pool = new Uint32Array(1024)
let next = pool.length
function pooledRandom(): number {
  if (next === pool.length) {
    randomFillSync(pool)
    next = 0
  }
  return pool[next++]! / 0x1_0000_0000
}

/**
 * Object ids: a type prefix plus a ULID (48-bit millisecond time, 80 random bits).
 * The monotonic factory keeps ids created in the same millisecond in creation order,
 * so "newest first" lists break created_at ties the way a user expects.
 */
const nextUlid = monotonicFactory(pooledRandom)

export type IdPrefix = 'acct' | 'key' | 'wish' | 'mdt' | 'pay' | 're' | 'evt' | 'we' | 'req' | 'job' | 'wha' | 'agt' | 'tk' | 'vt'

export function newId(prefix: IdPrefix, at: Date = new Date()): string {
  // Lowercased whole (the prefixes are lowercase already): toLowerCase returns a flat string, where
  // `${prefix}_${…}` would be a rope that V8's runtime flattens again where node checks a header's value
  // (docs/performance.md, twentieth pass).
  return `${prefix}_${nextUlid(at.getTime())}`.toLowerCase()
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** Uniformly random base62 text from the CSPRNG (randomInt avoids modulo bias). */
export function randomBase62(length: number): string {
  let out = ''
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)]
  return out
}

/** A uniformly random number in [0, 1), from the CSPRNG (what Math.random would give, for jitter). */
export function randomFraction(): number {
  return pooledRandom()
}

/** A uniformly random integer in [0, n), for spreading writes over slots (not for secrets). */
export function randomIndex(n: number): number {
  return Math.floor(pooledRandom() * n)
}

/** A webhook endpoint's signing secret, as Standard Webhooks has it: whsec_ plus base64 of 24 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`
}
