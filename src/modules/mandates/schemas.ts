import { Type, type Static } from '@sinclair/typebox'
import { CurrencyCode, IdempotencyKeyField, IdParams, ListMeta, Metadata, Nullable, PageQuery, StringEnum, Timestamp } from '../../http/schemas.js'

export const MANDATE_STATUSES = ['active', 'revoked', 'expired', 'consumed'] as const
export type MandateStatus = (typeof MANDATE_STATUSES)[number]
export const PROTOCOLS = ['ap2', 'acp'] as const
export const USAGES = ['single_use', 'multi_use'] as const

/** Integer minor units: 1..10^12. */
export const MinorAmount = (description: string) => Type.Integer({ minimum: 1, maximum: 1e12, description, examples: [5000] })

const Merchant = Type.Object({ id: Type.String(), name: Type.String(), website: Type.Optional(Type.String()) }, { additionalProperties: true })
const Instrument = Type.Object({ id: Type.String(), type: Type.String(), description: Type.Optional(Type.String()) }, { additionalProperties: true })

/** What an AP2 open Payment Mandate adds to a mandate (docs/decisions.md, "AP2 mandates"). */
export const MandateAp2Schema = Type.Object({
  open_mandate_hash: Type.String({ description: 'base64url SHA-256 of the open mandate\'s issuer-signed JWT; an open mandate makes one mandate per account' }),
  presentation_hash: Type.String({ description: 'base64url SHA-256 of the open mandate as presented: the `sd_hash` every closed mandate must carry' }),
  issuer: Type.Object({
    trusted_key_id: Type.String(),
    kid: Type.String(),
    role: StringEnum(['trusted_agent_provider', 'user_credential_issuer'] as const),
  }, { description: 'The trusted key that signed the open mandate; revoking it stops payments on this mandate' }),
  cnf_jwk: Type.Record(Type.String(), Type.String(), { description: 'The agent\'s public key (`cnf.jwk`): it must sign every closed mandate' }),
  min_amount: Nullable(Type.Integer({ description: 'payment.amount_range.min, minor units' })),
  recurrence: Nullable(Type.Object({
    frequency: Type.String({ description: 'payment.agent_recurrence.frequency' }),
    max_occurrences: Nullable(Type.Integer()),
    window: Nullable(Type.String({ description: 'ISO 8601 duration: at most one payment per window; null for ON_DEMAND' })),
  })),
  allowed_payees: Nullable(Type.Array(Merchant, { description: 'payment.allowed_payees as disclosed; null: any payee; []: none' })),
  allowed_payment_instruments: Nullable(Type.Array(Instrument, { description: 'payment.allowed_payment_instruments as disclosed; null: any; []: none' })),
  payment_reference: Nullable(Type.String({ description: 'payment.reference.conditional_transaction_id' })),
  issued_at: Nullable(Timestamp),
  last_payment_at: Nullable(Timestamp),
}, { description: 'The AP2 open Payment Mandate this mandate was made from; null for a plain mandate' })
export type MandateAp2 = Static<typeof MandateAp2Schema>

export const MandateSchema = Type.Object({
  id: Type.String({ examples: ['mdt_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  protocol: StringEnum(PROTOCOLS),
  status: StringEnum(MANDATE_STATUSES, { description: 'active, revoked, expired or consumed (a single_use mandate that paid)' }),
  wish_id: Nullable(Type.String()),
  agent_id: Nullable(Type.String({ description: 'The agent granted this mandate: agent keys (`ak_`) of other agents may not pay with it; the account\'s `sk_` keys may. null: no agent, and only the account\'s `sk_` keys may pay with it' })),
  currency: Type.String({ description: 'ISO 4217, upper-case' }),
  max_amount: Type.Integer({ description: 'Cap on each payment, minor units' }),
  budget_amount: Type.Integer({ description: 'Cap on the sum of payments, minor units' }),
  amount_used: Type.Integer({ description: 'What succeeded and in-flight payments hold, minor units' }),
  usage: StringEnum(USAGES),
  uses_count: Type.Integer({ description: 'Succeeded and in-flight payments' }),
  expires_at: Timestamp,
  not_before: Nullable(Timestamp),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
  revoked_at: Nullable(Timestamp),
  ap2: Nullable(MandateAp2Schema),
}, {
  $id: 'Mandate',
  title: 'Mandate',
  examples: [{
    id: 'mdt_01jf3v7k8m2n4p6q8r0s2t4v6w',
    protocol: 'ap2',
    status: 'active',
    wish_id: 'wish_01jf3v7k8m2n4p6q8r0s2t4v6w',
    agent_id: null,
    currency: 'USD',
    max_amount: 5000,
    budget_amount: 15000,
    amount_used: 0,
    usage: 'multi_use',
    uses_count: 0,
    expires_at: '2099-12-31T23:59:59.000Z',
    not_before: null,
    metadata: {},
    created_at: '2026-11-22T10:00:00.000Z',
    updated_at: '2026-11-22T10:00:00.000Z',
    revoked_at: null,
    ap2: null,
  }],
})
export type Mandate = Static<typeof MandateSchema>
export const MandateRef = Type.Ref(MandateSchema.$id!)

export const CreateMandateBody = Type.Object({
  protocol: StringEnum(PROTOCOLS, { description: 'ap2 or acp; must equal the wish\'s when wish_id is given; ap2 with `ap2.open_payment_mandate`' }),
  max_amount: Type.Optional(MinorAmount('Cap on each payment, in minor units. Required, unless `ap2.open_payment_mandate` gives it')),
  budget_amount: Type.Optional(MinorAmount('Cap on the sum of all payments, in minor units; default max_amount')),
  currency: Type.Optional(CurrencyCode({ description: 'ISO 4217, any case; default the wish\'s budget currency, else USD' })),
  usage: Type.Optional(StringEnum(USAGES, { description: 'single_use (the default) pays once; multi_use pays until the budget is spent' })),
  wish_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'The wish this mandate serves' })),
  agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'The agent granted this mandate (active, of this account, else 422 `agent_not_usable`): agent keys (`ak_`) of other agents may not pay with it; the account\'s `sk_` keys may' })),
  expires_at: Type.Optional(Type.String({ format: 'date-time', description: 'When the mandate lapses; must be in the future. Required, unless `ap2.open_payment_mandate` gives it' })),
  not_before: Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'No payment before this time' }))),
  metadata: Type.Optional(Metadata),
  ap2: Type.Optional(Type.Object({
    open_payment_mandate: Type.String({
      minLength: 1,
      maxLength: 65536,
      description: 'An AP2 v0.2 open Payment Mandate (`vct` mandate.payment.open.1): the compact SD-JWT with its disclosures (`jwt~d1~…~dn~`), signed by a trusted key of this account (POST /trusted_keys). Its constraints become the mandate\'s terms, so `max_amount`, `budget_amount`, `currency`, `usage`, `expires_at` and `not_before` may not be sent with it',
    }),
  }, { additionalProperties: false, description: 'Make the mandate from an AP2 open Payment Mandate; payments on it then need `ap2.payment_mandate`' })),
  idempotency_key: IdempotencyKeyField,
}, {
  additionalProperties: false,
  // max_amount and expires_at are required unless an AP2 open mandate gives them (JSON Schema if/else).
  if: { required: ['ap2'] },
  else: { required: ['max_amount', 'expires_at'] },
  examples: [{ protocol: 'ap2', max_amount: 5000, budget_amount: 15000, usage: 'multi_use', expires_at: '2099-12-31T23:59:59.000Z' }],
})
export type CreateMandateInput = Static<typeof CreateMandateBody>

/**
 * Defaults no schema can state (they depend on another member), applied before the idempotency
 * fingerprint and the service. The currency of a mandate for a wish comes from the wish, so only a
 * mandate without one defaults to USD here.
 */
export function withMandateDefaults(body: CreateMandateInput): CreateMandateInput {
  // An AP2 mandate's terms all come from its open mandate (mandates/service.ts refuses any sent).
  if (body.ap2 !== undefined) return body
  return {
    ...body,
    usage: body.usage ?? 'single_use',
    ...(body.max_amount === undefined ? {} : { budget_amount: body.budget_amount ?? body.max_amount }),
    ...(body.currency === undefined && body.wish_id === undefined ? { currency: 'USD' } : {}),
  }
}

/** The members an AP2 open mandate decides, so that a request may not also send them. */
export const AP2_DECIDED_MEMBERS = ['max_amount', 'budget_amount', 'currency', 'usage', 'expires_at', 'not_before'] as const

export const RevokeMandateBody = Type.Object({ idempotency_key: IdempotencyKeyField }, { additionalProperties: false, examples: [{ idempotency_key: 'example-revoke-9d4b27e1' }] })

export const ListMandatesQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(StringEnum(MANDATE_STATUSES)),
  wish_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
}, { additionalProperties: false })
export type ListMandatesInput = Static<typeof ListMandatesQuery>

export const MandateParams = IdParams
export const MandateList = Type.Object({ data: Type.Array(MandateRef), meta: ListMeta }, { description: 'A page of mandates' })
