import type { Trx } from '../../db/database.js'
import { isUniqueViolation } from '../../db/errors.js'
import { errors } from '../../lib/errors.js'
import type { RequestContext } from '../../lib/request-context.js'
import { MandateRefusal, verifyClosedPaymentMandate } from '../ap2/closed-mandate.js'
import { audienceFor } from '../ap2/nonces.js'
import * as ap2 from '../ap2/repository.js'
import type { MandateRow } from '../mandates/repository.js'
import type { MandateAp2 } from '../mandates/schemas.js'
import { findTrustedKey } from '../trusted-keys/repository.js'
import type { PaymentAp2Record, PaymentPlan } from './plan.js'
import type { CreatePaymentInput } from './schemas.js'

/**
 * AP2 payments: a payment on a mandate made from an open Payment Mandate carries the closed Payment
 * Mandate that authorises it (ap2.payment_mandate). It is verified here, before the plan; the plan then
 * carries what the general path writes with the hold (recordClosedMandate).
 */

const replayed = () => errors.ap2MandateRefused('mandate_replayed', 'This closed mandate has already been used for a payment: one consent pays once', 'ap2.payment_mandate')

/**
 * The closed mandate of an AP2 payment, verified against the mandate's open mandate (ap2/closed-mandate.ts)
 * and this account's audience; undefined when the request carries none (the plan then refuses if the
 * mandate needs one). The open mandate's issuer must still be trusted: revoking its key stops its mandates.
 */
export async function verifyPaymentMandate(trx: Trx, ctx: Pick<RequestContext, 'accountId'>, input: CreatePaymentInput, mandate: MandateRow | undefined, now: Date): Promise<PaymentAp2Record | undefined> {
  if (input.ap2 === undefined || mandate === undefined || mandate.ap2 === null) return undefined
  const open = JSON.parse(mandate.ap2) as MandateAp2
  const issuer = await findTrustedKey(trx, ctx.accountId, open.issuer.trusted_key_id)
  if (!issuer || issuer.status !== 'active') {
    throw errors.ap2MandateRefused('issuer_untrusted', `The trusted key '${open.issuer.kid}' that signed this mandate's open mandate has been revoked`, 'mandate_id')
  }
  try {
    const closed = await verifyClosedPaymentMandate({
      token: input.ap2.payment_mandate,
      open: {
        presentation_hash: open.presentation_hash,
        cnf_jwk: open.cnf_jwk,
        allowed_payees: open.allowed_payees,
        allowed_payment_instruments: open.allowed_payment_instruments,
      },
      audience: audienceFor(ctx.accountId),
      now,
      payment: { amount: input.amount, currency: input.currency },
    })
    return {
      reference: closed.reference,
      replay_key: closed.replay_key,
      nonce: closed.nonce,
      transaction_id: closed.transaction_id,
      payee: closed.payee,
      payment_instrument: closed.payment_instrument,
    }
  } catch (error) {
    if (error instanceof MandateRefusal) throw errors.ap2MandateRefused(error.code, error.message, error.param)
    throw error
  }
}

/**
 * Marks an AP2 plan's closed mandate used and uses its nonce, in the payment's transaction, before the
 * hold. The closed mandate's hash is a primary key, so of two payments with it in any processes the
 * second fails here (AP2 #346); it goes first so that a replay is named as one, not as a used nonce.
 */
export async function recordClosedMandate(trx: Trx, plan: PaymentPlan): Promise<void> {
  if (!plan.ap2) return
  const { record, agentId } = plan.ap2
  const accountId = plan.payment.account_id
  const now = plan.hold.now
  try {
    await ap2.insertClosedMandate(trx, { hash: record.replay_key, account_id: accountId, mandate_id: plan.payment.mandate_id, payment_id: plan.payment.id, created_at: now })
  } catch (error) {
    if (isUniqueViolation(error)) throw replayed()
    throw error
  }
  if (await ap2.useNonce(trx, { accountId, nonce: record.nonce, agentId, now })) return
  const nonce = await ap2.findNonce(trx, accountId, record.nonce)
  const why = !nonce ? 'was not issued by POST /ap2/nonces for this account'
    : nonce.used_at !== null ? 'has already been used'
      : nonce.expires_at <= now ? 'has lapsed (nonces live 5 minutes)'
        : 'was issued to another agent'
  throw errors.ap2MandateRefused('nonce_invalid', `The closed mandate's nonce ${why}`, 'nonce')
}
