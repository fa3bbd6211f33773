import { Type, type Static } from '@sinclair/typebox'
import { CurrencyCode, Defaulted, IdempotencyKeyField, IdParams, ListMeta, Metadata, Nullable, PageQuery, StringEnum, Timestamp } from '../../http/schemas.js'
import { MinorAmount } from '../mandates/schemas.js'

export const PAYMENT_STATUSES = ['pending', 'processing', 'succeeded', 'failed', 'refunded'] as const
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number]

const Party = Type.Object({ id: Type.String(), name: Type.Optional(Type.String()), type: Type.Optional(Type.String()) }, { additionalProperties: true })

/** What a payment made with an AP2 closed Payment Mandate keeps of it. */
export const PaymentAp2Schema = Type.Object({
  reference: Type.String({ description: 'base64url SHA-256 of the closed mandate as presented; the receipt\'s `reference`' }),
  transaction_id: Type.String({ description: 'The closed mandate\'s transaction_id (the checkout it pays)' }),
  payee: Party,
  payment_instrument: Party,
}, { description: 'The AP2 closed Payment Mandate the payment was made with; null for a plain payment' })

export const PaymentSchema = Type.Object({
  id: Type.String({ examples: ['pay_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  mandate_id: Type.String(),
  wish_id: Nullable(Type.String()),
  amount: Type.Integer({ description: 'Minor units' }),
  currency: Type.String(),
  status: StringEnum(PAYMENT_STATUSES, { description: 'pending -> processing -> succeeded | failed; succeeded -> refunded when fully refunded' }),
  protocol_type: StringEnum(['ap2', 'acp'] as const, { description: 'The mandate\'s protocol' }),
  payment_method: Type.String(),
  amount_refunded: Type.Integer({ description: 'Minor units refunded so far' }),
  failure_code: Nullable(Type.String({ description: 'card_declined, insufficient_funds, bank_transfer_failed' })),
  failure_message: Nullable(Type.String()),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
  ap2: Nullable(PaymentAp2Schema),
}, {
  $id: 'Payment',
  title: 'Payment',
  examples: [{
    id: 'pay_01jf3v7k8m2n4p6q8r0s2t4v6w',
    mandate_id: 'mdt_01jf3v7k8m2n4p6q8r0s2t4v6w',
    wish_id: null,
    amount: 4999,
    currency: 'USD',
    status: 'succeeded',
    protocol_type: 'ap2',
    payment_method: 'card',
    amount_refunded: 0,
    failure_code: null,
    failure_message: null,
    metadata: {},
    created_at: '2026-11-22T10:00:00.000Z',
    updated_at: '2026-11-22T10:00:00.000Z',
    ap2: null,
  }],
})
export type Payment = Static<typeof PaymentSchema>
export const PaymentRef = Type.Ref(PaymentSchema.$id!)

export const CreatePaymentBody = Type.Object({
  mandate_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'The mandate that authorises the payment. Required, unless `vault_token` is sent' })),
  vault_token: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'An ACP vault token (`vt_…`, POST /agentic_commerce/delegate_payment) instead of `mandate_id`: the payment is within its allowance, for its merchant and checkout session, once. Needs `merchant_id` and `checkout_session_id`' })),
  merchant_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'With `vault_token`: the merchant it was delegated to' })),
  checkout_session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'With `vault_token`: the checkout session it was delegated for' })),
  amount: MinorAmount('Amount in minor units, 1..10^12'),
  currency: Defaulted(CurrencyCode({ default: 'USD', description: 'ISO 4217, any case; default USD; must be the mandate\'s' })),
  payment_method: Defaulted(Type.String({
    minLength: 1,
    maxLength: 64,
    default: 'card',
    description: 'Sandbox: card, wallet (succeed), test_card_declined, test_insufficient_funds (fail), bank_transfer, test_bank_transfer_failed (settle later). Default card.',
  })),
  metadata: Type.Optional(Metadata),
  ap2: Type.Optional(Type.Object({
    payment_mandate: Type.String({
      minLength: 1,
      maxLength: 65536,
      description: 'The AP2 v0.2 closed Payment Mandate (`vct` mandate.payment.1, a kb+sd-jwt `jwt~disclosures~`), or the chain `open~~closed`: signed with the open mandate\'s `cnf` key, `sd_hash` the open mandate\'s, `aud` and `nonce` from POST /ap2/nonces, `payment_amount` this request\'s amount and currency, payee and instrument allowed by the open mandate. It pays once',
    }),
  }, { additionalProperties: false, description: 'Required on a mandate made from an AP2 open mandate (else 422 `ap2_mandate_required`)' })),
  idempotency_key: IdempotencyKeyField,
}, {
  additionalProperties: false,
  // mandate_id, or an ACP vault token with its merchant and session (JSON Schema if/then/else).
  if: { required: ['vault_token'] },
  then: { required: ['merchant_id', 'checkout_session_id'] },
  else: { required: ['mandate_id'] },
  examples: [{ mandate_id: 'mdt_01jf3v7k8m2n4p6q8r0s2t4v6w', amount: 4999, currency: 'USD', payment_method: 'card', idempotency_key: 'example-payment-6c1e0b7d' }],
})
export type CreatePaymentInput = Static<typeof CreatePaymentBody>

export const ListPaymentsQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(StringEnum(PAYMENT_STATUSES)),
  mandate_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  wish_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
}, { additionalProperties: false })
export type ListPaymentsInput = Static<typeof ListPaymentsQuery>

export const PaymentParams = IdParams
export const PaymentList = Type.Object({ data: Type.Array(PaymentRef), meta: ListMeta }, { description: 'A page of payments' })

export const RefundSchema = Type.Object({
  id: Type.String({ examples: ['re_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  payment_id: Type.String(),
  amount: Type.Integer({ description: 'Minor units' }),
  reason: Nullable(Type.String()),
  status: StringEnum(['succeeded'] as const),
  created_at: Timestamp,
}, {
  $id: 'Refund',
  title: 'Refund',
  examples: [{
    id: 're_01jf3v7k8m2n4p6q8r0s2t4v6w',
    payment_id: 'pay_01jf3v7k8m2n4p6q8r0s2t4v6w',
    amount: 1000,
    reason: 'requested_by_customer',
    status: 'succeeded',
    created_at: '2026-11-22T10:05:00.000Z',
  }],
})
export type Refund = Static<typeof RefundSchema>
export const RefundRef = Type.Ref(RefundSchema.$id!)

export const CreateRefundBody = Type.Object({
  amount: Type.Optional(MinorAmount('Minor units to refund; default what remains')),
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Why, in your words' })),
  idempotency_key: IdempotencyKeyField,
}, { additionalProperties: false, examples: [{ amount: 1000, reason: 'requested_by_customer', idempotency_key: 'example-refund-3a9f52c4' }] })
export type CreateRefundInput = Static<typeof CreateRefundBody>

/** POST /payments/{id}/settle: nothing to send but, optionally, an idempotency key. */
export const SettlePaymentBody = Type.Object({ idempotency_key: IdempotencyKeyField }, { additionalProperties: false, examples: [{ idempotency_key: 'example-settle-5c2e81d0' }] })

export const ListRefundsQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export const RefundList = Type.Object({ data: Type.Array(RefundRef), meta: ListMeta }, { description: 'A page of refunds' })
