import type { Database } from '../../db/database.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { loadJose } from '../../lib/jose.js'
import { errors } from '../../lib/errors.js'
import type { RequestContext } from '../../lib/request-context.js'
import * as payments from '../payments/repository.js'
import * as repo from './repository.js'
import type { JwksValue, Receipt, ReceiptClaimsValue } from './schemas.js'
import { createSignerCache, ensureSigningKey, publishedKeys, rotateSigningKey, SIGNING_ALG } from './signing-keys.js'

/** The `iss` of every receipt: fixed, since the key (in the JWKS) is what identifies Wishpay. */
export const RECEIPT_ISSUER = 'urn:wishpay:psp'

/** The final payment statuses and the receipt status each gets; any other status has no receipt yet. */
const RECEIPT_STATUS: Record<string, 'Success' | 'Error'> = { succeeded: 'Success', refunded: 'Success', failed: 'Error' }

/** The closed mandate's reference of an AP2 payment; undefined for a plain payment. */
function referenceOf(payment: payments.PaymentRow): string | undefined {
  if (payment.ap2 === null) return undefined
  const reference = (JSON.parse(payment.ap2) as { reference?: unknown }).reference
  if (typeof reference !== 'string' || reference === '') throw new Error(`payment ${payment.id}: ap2 has no reference`)
  return reference
}

/** The PaymentReceipt payload (ap2-v0.2 payment_receipt.json) of a final payment. */
export function receiptClaims(payment: payments.PaymentRow, reference: string, status: 'Success' | 'Error', iat: number): ReceiptClaimsValue {
  const common = { iss: RECEIPT_ISSUER, iat, status, reference, payment_id: payment.id }
  if (status === 'Success') {
    // There is no card network behind the sandbox: the network id is derived from the payment id.
    return { ...common, psp_confirmation_id: payment.id, network_confirmation_id: `net_${payment.id}` }
  }
  return { ...common, error: payment.failure_code ?? 'payment_failed', error_description: payment.failure_message ?? 'The payment failed' }
}

async function toReceipt(row: repo.ReceiptRow): Promise<Receipt> {
  const { decodeJwt } = await loadJose()
  return { payment_id: row.payment_id, receipt: row.jwt, kid: row.kid, claims: decodeJwt(row.jwt) as ReceiptClaimsValue, created_at: row.created_at }
}

/** AP2 PaymentReceipts signed by Wishpay's own key, and that key's JWKS. */
export function createReceiptService(deps: { db: Database, clock: Clock }) {
  const { db, clock } = deps
  const signers = createSignerCache({ db, clock })

  return {
    /** Makes Wishpay's first signing key if there is none (server start; also done lazily). Returns the signing kid. */
    ensureSigningKey: () => ensureSigningKey(db, clock),

    /** A new active key; the old ones are retired (still published 30 days). This process signs with the new one at once. */
    async rotateSigningKey(): Promise<{ kid: string, retired: string[] }> {
      const rotated = await rotateSigningKey(db, clock)
      signers.clear()
      return rotated
    },

    /** The public keys receipts verify with (made first if there are none). */
    async jwks(): Promise<JwksValue> {
      let keys = await publishedKeys(db, clock)
      if (keys.length === 0) {
        await ensureSigningKey(db, clock)
        keys = await publishedKeys(db, clock)
      }
      return { keys }
    },

    /**
     * The payment's receipt: signed on the first read after the payment is final and stored; every later
     * read (and a concurrent first read that lost) answers the stored one. An agent key sees its own payments only.
     */
    async get(ctx: RequestContext, paymentId: string): Promise<Receipt> {
      const payment = await payments.findPayment(db.kysely, ctx.accountId, paymentId, ctx.agentId)
      if (!payment) throw errors.resourceMissing('payment', paymentId)
      const reference = referenceOf(payment)
      if (reference === undefined) throw errors.receiptMissing(paymentId)
      const stored = await repo.findReceipt(db.kysely, payment.id)
      if (stored) return toReceipt(stored)
      const status = RECEIPT_STATUS[payment.status]
      if (status === undefined) {
        throw errors.invalidStateTransition(`Payment '${paymentId}' is ${payment.status}: its receipt is signed once it is final (succeeded, failed or refunded); retry then`)
      }
      const nowDate = clock.now()
      const signer = await signers.signer()
      const claims = receiptClaims(payment, reference, status, Math.floor(nowDate.getTime() / 1000))
      const { SignJWT } = await loadJose()
      const jwt = await new SignJWT({ ...claims }).setProtectedHeader({ alg: SIGNING_ALG, kid: signer.kid, typ: 'JWT' }).sign(signer.key)
      await repo.insertReceiptIfAbsent(db.kysely, { payment_id: payment.id, account_id: payment.account_id, kid: signer.kid, jwt, created_at: toTimestamp(nowDate) })
      return toReceipt((await repo.findReceipt(db.kysely, payment.id))!)
    },
  }
}

export type ReceiptService = ReturnType<typeof createReceiptService>
