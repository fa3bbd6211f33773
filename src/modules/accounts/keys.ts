import { hash } from 'node:crypto'
import { randomBase62 } from '../../lib/ids.js'

/** write (sk_), read (rk_), or agent (ak_: one agent's narrow key, see http/auth.ts). */
export type Scope = 'read' | 'write' | 'agent'

const PREFIX_BY_SCOPE: Record<Scope, string> = { write: 'sk_', read: 'rk_', agent: 'ak_' }
const KEY_PATTERN = /^(sk|rk|ak)_[0-9A-Za-z]{32,128}$/
/** The longest key KEY_PATTERN accepts: a prefix, its underscore and 128 characters. */
export const KEY_MAX_LENGTH = 3 + 128
/** Random part of a new key: 40 base62 characters, about 238 bits. */
const RANDOM_LENGTH = 40
/** What is kept in clear for people to recognise a key: "sk_" plus 5 characters. */
const DISPLAY_LENGTH = 8

export function generateKey(scope: Scope): string {
  return PREFIX_BY_SCOPE[scope] + randomBase62(RANDOM_LENGTH)
}

/** Cheap shape check so malformed keys never reach the database. */
export function isWellFormedKey(key: string): boolean {
  return KEY_PATTERN.test(key)
}

/**
 * Keys are long random secrets, so a single SHA-256 is the right hash (no salt or stretching needed).
 * One-shot crypto.hash: every authenticated request hashes its key, and it makes no Hash object.
 */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex')
}

export function displayPrefix(key: string): string {
  return `${key.slice(0, DISPLAY_LENGTH)}…`
}
