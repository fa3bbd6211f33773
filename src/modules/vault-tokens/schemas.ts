import { Type, type Static } from '@sinclair/typebox'
import { IdempotencyKeyField, IdParams, Nullable, StringEnum, Timestamp } from '../../http/schemas.js'
import { MANDATE_STATUSES } from '../mandates/schemas.js'

export const VaultTokenSchema = Type.Object({
  id: Type.String({ examples: ['vt_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  mandate_id: Type.String({ description: 'The single-use mandate of protocol acp the token is: its cap is the allowance' }),
  parent_mandate_id: Nullable(Type.String({ description: 'The mandate whose budget the token also draws on (metadata.wishpay_mandate_id at creation), or null' })),
  status: StringEnum(MANDATE_STATUSES, { description: 'The mandate\'s: active, consumed (it paid), revoked or expired' }),
  merchant_id: Type.String(),
  checkout_session_id: Type.String(),
  allowance: Type.Object({
    reason: Type.String(),
    max_amount: Type.Integer({ description: 'Minor units' }),
    currency: Type.String({ description: 'As ACP sends it: lower case' }),
    expires_at: Timestamp,
  }),
  card: Type.Object({
    brand: Type.String(),
    last4: Nullable(Type.String()),
    funding: Type.Optional(Type.String()),
    exp_month: Nullable(Type.String()),
    exp_year: Nullable(Type.String()),
    name: Nullable(Type.String()),
    iin: Nullable(Type.String()),
    checks_performed: Type.Array(Type.String()),
    card_number_type: Type.String(),
    fingerprint: Type.String({ description: 'A keyed hash of the number: equal for the same card, useless without the server\'s secret' }),
  }, { description: 'What Wishpay keeps of the card: never the number, the CVC or a cryptogram' }),
  billing_address: Nullable(Type.Record(Type.String(), Type.String())),
  metadata: Type.Record(Type.String(), Type.String(), { description: 'The delegation request\'s metadata' }),
  created_at: Timestamp,
}, { $id: 'VaultToken', title: 'VaultToken' })
export type VaultToken = Static<typeof VaultTokenSchema>
export const VaultTokenRef = Type.Ref(VaultTokenSchema.$id!)

export const VaultTokenParams = IdParams
export const RevokeVaultTokenBody = Type.Object({ idempotency_key: IdempotencyKeyField }, { additionalProperties: false, examples: [{}] })
