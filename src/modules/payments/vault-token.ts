import type { Trx } from '../../db/database.js'
import { errors } from '../../lib/errors.js'
import type { RequestContext } from '../../lib/request-context.js'
import * as vaultTokens from '../vault-tokens/repository.js'
import type { PaymentInput } from './plan.js'
import type { CreatePaymentInput } from './schemas.js'

/**
 * The mandate a payment pays with: the one it names, or an ACP vault token's (issue 15). A token pays
 * only for the merchant and checkout session it was delegated for; everything else (allowance, currency,
 * expiry, once) is its single-use mandate's, checked by the hold like any mandate's. A token made under
 * a Wishpay mandate also holds the amount there (`parentMandateId`).
 */
export async function resolveMandate(trx: Trx, ctx: Pick<RequestContext, 'accountId'>, input: CreatePaymentInput): Promise<{ input: PaymentInput, parentMandateId?: string }> {
  if (input.vault_token === undefined) {
    if (input.mandate_id === undefined) throw errors.validation([{ param: 'mandate_id', code: 'parameter_missing', message: 'mandate_id is required' }])
    return { input: { ...input, mandate_id: input.mandate_id } }
  }
  if (input.mandate_id !== undefined) throw errors.parameterInvalid('mandate_id', 'Send mandate_id or vault_token, not both: a vault token is its own mandate')
  const token = await vaultTokens.findVaultToken(trx, ctx.accountId, input.vault_token)
  if (!token) throw errors.payment('vault_token_not_found', `No such vault token in this account: '${input.vault_token}'`, 'vault_token')
  if (token.merchant_id !== input.merchant_id) throw errors.payment('vault_token_merchant_mismatch', 'The vault token was delegated to another merchant', 'merchant_id')
  if (token.checkout_session_id !== input.checkout_session_id) {
    throw errors.payment('vault_token_session_mismatch', 'The vault token was delegated for another checkout session', 'checkout_session_id')
  }
  return { input: { ...input, mandate_id: token.mandate_id }, ...(token.parent_mandate_id === null ? {} : { parentMandateId: token.parent_mandate_id }) }
}

/** The parent mandate of the vault token whose mandate this is, if any (to give back what a failed payment held there). */
export async function parentMandateOf(trx: Trx, mandateId: string): Promise<string | undefined> {
  return (await vaultTokens.findByMandate(trx, mandateId))?.parent_mandate_id ?? undefined
}
