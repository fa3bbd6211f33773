import type { CryptoKey, JWK } from 'jose'
import type { Database } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { loadJose } from '../../lib/jose.js'
import * as repo from './repository.js'

/**
 * Wishpay's own signing keys (receipts): ES256 P-256 pairs made with jose, kid = the JWK thumbprint
 * (RFC 7638), kept in `signing_keys`. The private half is read only to sign and is never logged or
 * answered; the JWKS is made from the public halves.
 */
export const SIGNING_ALG = 'ES256'
/** A retired key stays in the JWKS this long after its retirement, so the receipts it signed still verify. */
export const RETIRED_KEY_PUBLISHED_MS = 30 * 24 * 60 * 60 * 1000
/** How long a process keeps the active key in memory: a rotation elsewhere is seen within this time. */
export const ACTIVE_KEY_CACHE_MS = 60 * 1000

export interface PublicSigningJwk {
  kty: string
  crv: string
  x: string
  y: string
  kid: string
  alg: typeof SIGNING_ALG
  use: 'sig'
}

export interface Signer {
  kid: string
  key: CryptoKey
}

/** A new active key row (not stored). */
async function newKeyRow(now: string): Promise<repo.SigningKeyRow> {
  const { calculateJwkThumbprint, exportJWK, generateKeyPair } = await loadJose()
  const pair = await generateKeyPair(SIGNING_ALG, { extractable: true })
  const publicJwk = await exportJWK(pair.publicKey)
  const kid = await calculateJwkThumbprint(publicJwk, 'sha256')
  const published: PublicSigningJwk = { kty: publicJwk.kty!, crv: publicJwk.crv!, x: publicJwk.x!, y: publicJwk.y!, kid, alg: SIGNING_ALG, use: 'sig' }
  const privateJwk: JWK = { ...(await exportJWK(pair.privateKey)), kid, alg: SIGNING_ALG }
  return {
    kid,
    alg: SIGNING_ALG,
    public_jwk: JSON.stringify(published),
    private_jwk: JSON.stringify(privateJwk),
    status: 'active',
    created_at: now,
    retired_at: null,
  }
}

/**
 * Makes a key when no active one exists (first start). Two processes starting at once may each make
 * one: both are active and published, and the oldest signs. Returns the kid that signs.
 */
export async function ensureSigningKey(db: Database, clock: Clock): Promise<string> {
  const existing = await repo.oldestActiveKey(db.kysely)
  if (existing) return existing.kid
  await repo.insertSigningKey(db.kysely, await newKeyRow(toTimestamp(clock.now())))
  return (await repo.oldestActiveKey(db.kysely))!.kid
}

/**
 * A new active key; every key active until now is retired (retired_at = now) in the same transaction.
 * Retired keys stay in the JWKS for RETIRED_KEY_PUBLISHED_MS. Other processes sign with the new key
 * once their cache expires (ACTIVE_KEY_CACHE_MS).
 */
export async function rotateSigningKey(db: Database, clock: Clock): Promise<{ kid: string, retired: string[] }> {
  const now = toTimestamp(clock.now())
  const row = await newKeyRow(now)
  return inTransaction(db, {}, async (trx) => {
    const retired = await repo.retireActiveKeys(trx, now)
    await repo.insertSigningKey(trx, row)
    return { kid: row.kid, retired }
  })
}

/** The public keys to publish: active ones, and those retired less than RETIRED_KEY_PUBLISHED_MS ago. */
export async function publishedKeys(db: Database, clock: Clock): Promise<PublicSigningJwk[]> {
  const since = toTimestamp(new Date(clock.now().getTime() - RETIRED_KEY_PUBLISHED_MS))
  const rows = await repo.publishedKeys(db.kysely, since)
  return rows.map((row) => JSON.parse(row.public_jwk) as PublicSigningJwk)
}

/**
 * The signing key of this process: the oldest active key, imported once and kept ACTIVE_KEY_CACHE_MS;
 * made (ensureSigningKey) if there is none yet, so an app built in-process signs without a server start.
 */
export function createSignerCache(deps: { db: Database, clock: Clock }) {
  const { db, clock } = deps
  let cached: { signer: Signer, until: number } | undefined
  let loading: Promise<Signer> | undefined
  // Bumped by clear(): a load that started before it does not cache what it read.
  let generation = 0

  async function load(): Promise<Signer> {
    const started = generation
    let row = await repo.oldestActiveKey(db.kysely)
    if (!row) {
      await ensureSigningKey(db, clock)
      row = await repo.oldestActiveKey(db.kysely)
    }
    const { importJWK } = await loadJose()
    const key = await importJWK(JSON.parse(row!.private_jwk) as JWK, SIGNING_ALG)
    const signer = { kid: row!.kid, key: key as CryptoKey }
    if (started === generation) cached = { signer, until: clock.now().getTime() + ACTIVE_KEY_CACHE_MS }
    return signer
  }

  return {
    async signer(): Promise<Signer> {
      if (cached && clock.now().getTime() < cached.until) return cached.signer
      // Concurrent first reads share one load (and at most one new key).
      loading ??= load().finally(() => { loading = undefined })
      return loading
    },
    /** Forget the cached key (after a rotation in this process). */
    clear(): void {
      cached = undefined
      loading = undefined
      generation++
    },
  }
}
