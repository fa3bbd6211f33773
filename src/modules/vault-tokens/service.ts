import type { Database, Executor } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { normalizeCurrency } from '../../lib/currency.js'
import { errors } from '../../lib/errors.js'
import { newId, randomBase62 } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import { cardProblem, cardView } from '../acp/card.js'
import { acpErrors } from '../acp/errors.js'
import type { DelegatePaymentRequest, DelegatePaymentResponse } from '../acp/schemas.js'
import { recordEvent } from '../events/outbox.js'
import * as mandates from '../mandates/repository.js'
import { effectiveMandateStatus } from '../mandates/rules.js'
import { toMandate } from '../mandates/service.js'
import * as repo from './repository.js'
import type { VaultToken } from './schemas.js'

/** The metadata member that makes a token under an existing Wishpay mandate (documented; ACP's metadata is free). */
export const PARENT_MANDATE_METADATA_KEY = 'wishpay_mandate_id'

function toVaultToken(row: NonNullable<Awaited<ReturnType<typeof repo.findVaultToken>>>, now: string): VaultToken {
  return {
    id: row.id,
    mandate_id: row.mandate_id,
    parent_mandate_id: row.parent_mandate_id,
    status: effectiveMandateStatus(row.mandate, now),
    merchant_id: row.merchant_id,
    checkout_session_id: row.checkout_session_id,
    allowance: JSON.parse(row.allowance) as VaultToken['allowance'],
    card: JSON.parse(row.card) as VaultToken['card'],
    billing_address: row.billing_address === null ? null : JSON.parse(row.billing_address) as VaultToken['billing_address'],
    metadata: JSON.parse(row.metadata) as VaultToken['metadata'],
    created_at: row.created_at,
  }
}

/**
 * ACP vault tokens (issue 15): a delegated card becomes a single-use mandate of protocol acp whose cap
 * is the allowance, bound to its merchant and checkout session. The card's number and CVC are used
 * for the checks and the fingerprint only and never stored (acp/card.ts).
 */
export function createVaultTokenService(deps: { db: Database, clock: Clock, cardFingerprintSecret?: string | undefined }) {
  const { db, clock } = deps
  /**
   * The configured fingerprint key, else one the server made for itself on first use and keeps, read in
   * the request's transaction (not cached: a key made in a transaction that rolls back must not live on).
   */
  const fingerprintSecret = (trx: Executor) => (deps.cardFingerprintSecret !== undefined
    ? Promise.resolve(deps.cardFingerprintSecret)
    : repo.serverSecret(trx, 'card_fingerprint', () => randomBase62(43), toTimestamp(clock.now())))

  return {
    /** POST /agentic_commerce/delegate_payment: the token, in the request's transaction. Throws AcpError for what ACP names. */
    async delegate(ctx: RequestContext, request: DelegatePaymentRequest, idempotencyKey: string): Promise<DelegatePaymentResponse> {
      const nowDate = clock.now()
      const now = toTimestamp(nowDate)
      const card = cardProblem(request.payment_method, nowDate)
      if (card) throw card
      const { allowance } = request
      const currency = normalizeCurrency(allowance.currency)
      if (currency === undefined) throw acpErrors.invalidRequest('invalid_allowance', `Unknown currency '${allowance.currency}'`, '$.allowance.currency', 422)
      if (allowance.max_amount < 1 || allowance.max_amount > 1e12) {
        throw acpErrors.invalidRequest('invalid_allowance', 'allowance.max_amount must be 1..10^12 minor units', '$.allowance.max_amount', 422)
      }
      const expiresAt = new Date(allowance.expires_at)
      if (!(expiresAt > nowDate)) throw acpErrors.invalidRequest('invalid_allowance', 'allowance.expires_at must be in the future', '$.allowance.expires_at', 422)
      const parentId = request.metadata[PARENT_MANDATE_METADATA_KEY]

      return inTransaction(db, ctx, async (trx) => {
        const view = cardView(request.payment_method, await fingerprintSecret(trx))
        if (parentId !== undefined) {
          const parent = await mandates.findMandate(trx, ctx.accountId, parentId)
          const usable = parent && effectiveMandateStatus(parent, now) === 'active' && parent.usage === 'multi_use' && parent.currency === currency && parent.ap2 === null
          if (!usable) {
            throw acpErrors.invalidRequest('invalid_parent_mandate',
              `metadata.${PARENT_MANDATE_METADATA_KEY} must name an active multi_use ${currency} mandate of this account that is not AP2`, `$.metadata.${PARENT_MANDATE_METADATA_KEY}`, 422)
          }
        }
        const id = newId('vt', nowDate)
        const mandate: mandates.MandateRow = {
          id: newId('mdt', nowDate), account_id: ctx.accountId, protocol: 'acp', status: 'active', wish_id: null, agent_id: null,
          currency, max_amount: allowance.max_amount, budget_amount: allowance.max_amount, amount_used: 0, usage: 'single_use', uses_count: 0,
          expires_at: toTimestamp(expiresAt), not_before: null, metadata: JSON.stringify({ vault_token: id }),
          created_at: now, updated_at: now, revoked_at: null,
          min_amount: null, max_uses: null, recurrence_frequency: null, last_payment_at: null, ap2_open_hash: null, ap2: null,
        }
        await mandates.insertMandate(trx, mandate)
        await repo.insertVaultToken(trx, {
          id, account_id: ctx.accountId, mandate_id: mandate.id, parent_mandate_id: parentId ?? null,
          merchant_id: allowance.merchant_id, checkout_session_id: allowance.checkout_session_id,
          allowance: JSON.stringify({ ...allowance, expires_at: toTimestamp(expiresAt) }),
          card: JSON.stringify(view),
          billing_address: request.billing_address === undefined ? null : JSON.stringify(request.billing_address),
          risk_signals: JSON.stringify(request.risk_signals), metadata: JSON.stringify(request.metadata), created_at: now,
        })
        await recordEvent(trx, { accountId: ctx.accountId, type: 'mandate.created', object: toMandate(mandate, now), requestId: ctx.requestId, createdAt: now })
        // ACP 2.4: the response echoes correlation data under metadata.
        return { id, created: now, metadata: { ...request.metadata, merchant_id: allowance.merchant_id, idempotency_key: idempotencyKey } }
      })
    },

    async get(ctx: RequestContext, id: string): Promise<VaultToken> {
      const row = await repo.findVaultToken(db.kysely, ctx.accountId, id)
      if (!row) throw errors.resourceMissing('vault token', id)
      return toVaultToken(row, toTimestamp(clock.now()))
    },

    /** Revokes the token's mandate: it can never pay from then on. Only an active token can be revoked (409). */
    async revoke(ctx: RequestContext, id: string): Promise<VaultToken> {
      const now = toTimestamp(clock.now())
      return inTransaction(db, ctx, async (trx) => {
        const row = await repo.findVaultToken(trx, ctx.accountId, id)
        if (!row) throw errors.resourceMissing('vault token', id)
        const revoked = await mandates.revoke(trx, ctx.accountId, row.mandate_id, now)
        if (!revoked) throw errors.invalidStateTransition(`The vault token is ${effectiveMandateStatus(row.mandate, now)}; only an active token can be revoked`)
        await recordEvent(trx, { accountId: ctx.accountId, type: 'mandate.revoked', object: toMandate(revoked, now), requestId: ctx.requestId, createdAt: now })
        return toVaultToken({ ...row, mandate: revoked }, now)
      })
    },
  }
}

export type VaultTokenService = ReturnType<typeof createVaultTokenService>
