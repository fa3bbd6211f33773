import type { JsonWebKey } from 'node:crypto'
import { isUniqueViolation } from '../../db/errors.js'
import type { Database } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { errors } from '../../lib/errors.js'
import { newId } from '../../lib/ids.js'
import { listPage } from '../../lib/paging.js'
import type { RequestContext } from '../../lib/request-context.js'
import { type IssuerKey, issuerKidOf, OpenMandateRefusal, type VerifiedOpenMandate, verifyOpenPaymentMandate } from '../ap2/open-mandate.js'
import { recordEvent } from '../events/outbox.js'
import { checkTrustedJwk } from './jwk.js'
import * as repo from './repository.js'
import type { CreateTrustedKeyInput, ListTrustedKeysInput, StoredPublicJwkValue, TrustedKey } from './schemas.js'

export function toTrustedKey(row: repo.TrustedKeyRow): TrustedKey {
  return {
    id: row.id,
    kid: row.kid,
    role: row.role,
    public_jwk: JSON.parse(row.public_jwk) as StoredPublicJwkValue,
    status: row.status,
    description: row.description,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
  }
}

/**
 * Active trusted keys an account may have: every ACP request's signature is tried against each of the
 * account's active `acp_client` keys, so their number multiplies the work of every request.
 */
export const MAX_ACTIVE_TRUSTED_KEYS_PER_ACCOUNT = 16

/** The issuers an account trusts to sign AP2 open mandates (Trusted Agent Providers, User Credential issuers). */
export function createTrustedKeyService(deps: { db: Database, clock: Clock }) {
  const { db, clock } = deps

  /** The account's trusted key with this kid, as the AP2 verifier takes it (revoked ones included, to be refused by name). */
  async function issuerKey(accountId: string, kid: string, executor = db.kysely): Promise<IssuerKey[]> {
    const row = await repo.findByKid(executor, accountId, kid)
    // An ACP client's key signs requests, never mandates.
    if (!row || row.role === 'acp_client') return []
    return [{ id: row.id, kid: row.kid, role: row.role as IssuerKey['role'], status: row.status, public_jwk: JSON.parse(row.public_jwk) as IssuerKey['public_jwk'] }]
  }

  return {
    async create(ctx: RequestContext, input: CreateTrustedKeyInput): Promise<TrustedKey> {
      const checked = await checkTrustedJwk(input.public_jwk)
      if ('problem' in checked) throw errors.parameterInvalid(checked.problem.param, checked.problem.message)
      if (input.role === 'acp_client' && checked.jwk.kty === 'RSA') throw errors.parameterInvalid('public_jwk.kty', 'An acp_client key is EC P-256 (ES256) or OKP Ed25519: ACP request signatures use those')
      const kid = checked.jwk.kid
      return inTransaction(db, ctx, async (trx) => {
        if (await repo.findByKid(trx, ctx.accountId, kid)) throw errors.kidInUse(kid)
        const nowDate = clock.now()
        const now = toTimestamp(nowDate)
        const row: repo.TrustedKeyRow = {
          id: newId('tk', nowDate),
          account_id: ctx.accountId,
          kid,
          role: input.role,
          public_jwk: JSON.stringify(checked.jwk),
          status: 'active',
          description: input.description ?? null,
          created_at: now,
          revoked_at: null,
        }
        try {
          if (!(await repo.insertTrustedKeyWithinLimit(trx, row, MAX_ACTIVE_TRUSTED_KEYS_PER_ACCOUNT))) {
            throw errors.resourceLimitExceeded(`An account may have at most ${MAX_ACTIVE_TRUSTED_KEYS_PER_ACCOUNT} active trusted keys; revoke one it no longer uses first`)
          }
        } catch (error) {
          // Another request registered the same kid between the check and the insert.
          if (isUniqueViolation(error)) throw errors.kidInUse(kid)
          throw error
        }
        const key = toTrustedKey(row)
        await recordEvent(trx, { accountId: ctx.accountId, type: 'trusted_key.created', object: key, requestId: ctx.requestId, createdAt: now })
        return key
      })
    },

    async get(ctx: RequestContext, id: string): Promise<TrustedKey> {
      const row = await repo.findTrustedKey(db.kysely, ctx.accountId, id)
      if (!row) throw errors.resourceMissing('trusted key', id)
      return toTrustedKey(row)
    },

    async list(ctx: RequestContext, input: ListTrustedKeysInput) {
      const filter = { accountId: ctx.accountId, status: input.status, role: input.role }
      return listPage(input, {
        resource: 'trusted key',
        find: (id) => repo.findTrustedKey(db.kysely, ctx.accountId, id),
        rows: (window) => repo.listTrustedKeys(db.kysely, filter, window),
        total: () => repo.countTrustedKeys(db.kysely, filter),
        map: toTrustedKey,
      })
    },

    /** For good: mandates signed by this key are refused from then on (issuer_untrusted). Twice is a 409. */
    async revoke(ctx: RequestContext, id: string): Promise<TrustedKey> {
      const now = toTimestamp(clock.now())
      return inTransaction(db, ctx, async (trx) => {
        const revoked = await repo.revoke(trx, ctx.accountId, id, now)
        if (!revoked) {
          if (!(await repo.findTrustedKey(trx, ctx.accountId, id))) throw errors.resourceMissing('trusted key', id)
          throw errors.invalidStateTransition('The trusted key is already revoked')
        }
        const key = toTrustedKey(revoked)
        await recordEvent(trx, { accountId: ctx.accountId, type: 'trusted_key.revoked', object: key, requestId: ctx.requestId, createdAt: now })
        return key
      })
    },

    issuerKey,

    /** The account's active ACP client keys, as JWKs (src/modules/acp/routes.ts requires a signature when there is one). */
    async acpClientKeys(accountId: string): Promise<JsonWebKey[]> {
      const rows = await repo.listActiveByRole(db.kysely, accountId, 'acp_client')
      return rows.map((row) => JSON.parse(row.public_jwk) as JsonWebKey)
    },

    /**
     * Verifies an AP2 open Payment Mandate against this account's trusted keys at the clock's now: the
     * entry point for POST /mandates with `ap2.open_payment_mandate` (not wired yet). A refusal is the
     * AppError the route answers with (400 mandate_malformed, else 422 payment_error).
     */
    async verifyOpenMandate(accountId: string, token: string): Promise<VerifiedOpenMandate> {
      const kid = issuerKidOf(token)
      const trustedKeys = kid === undefined ? [] : await issuerKey(accountId, kid)
      try {
        return await verifyOpenPaymentMandate({ token, trustedKeys, now: clock.now() })
      } catch (error) {
        if (error instanceof OpenMandateRefusal) throw errors.ap2MandateRefused(error.code, error.message, error.param)
        throw error
      }
    },
  }
}

export type TrustedKeyService = ReturnType<typeof createTrustedKeyService>
