import { Type, type Static } from '@sinclair/typebox'
import { CurrencyCode, Defaulted, IdempotencyKeyField, IdParams, ListMeta, Metadata, Nullable, PageQuery, StringEnum, Timestamp } from '../../http/schemas.js'

export const MANDATE_STATUSES = ['active', 'revoked', 'expired', 'consumed'] as const
export type MandateStatus = (typeof MANDATE_STATUSES)[number]
export const PROTOCOLS = ['ap2', 'acp'] as const
export const USAGES = ['single_use', 'multi_use'] as const

/** Integer minor units: 1..10^12. */
export const MinorAmount = (description: string) => Type.Integer({ minimum: 1, maximum: 1e12, description, examples: [5000] })

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
  }],
})
export type Mandate = Static<typeof MandateSchema>
export const MandateRef = Type.Ref(MandateSchema.$id!)

export const CreateMandateBody = Type.Object({
  protocol: StringEnum(PROTOCOLS, { description: 'ap2 or acp; must equal the wish\'s when wish_id is given' }),
  max_amount: MinorAmount('Cap on each payment, in minor units'),
  budget_amount: Type.Optional(MinorAmount('Cap on the sum of all payments, in minor units; default max_amount')),
  currency: Type.Optional(CurrencyCode({ description: 'ISO 4217, any case; default the wish\'s budget currency, else USD' })),
  usage: Defaulted(StringEnum(USAGES, { default: 'single_use', description: 'single_use (default) pays once; multi_use pays until the budget is spent' })),
  wish_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'The wish this mandate serves' })),
  agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'The agent granted this mandate (active, of this account, else 422 `agent_not_usable`): agent keys (`ak_`) of other agents may not pay with it; the account\'s `sk_` keys may' })),
  expires_at: Type.String({ format: 'date-time', description: 'When the mandate lapses; must be in the future' }),
  not_before: Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'No payment before this time' }))),
  metadata: Type.Optional(Metadata),
  idempotency_key: IdempotencyKeyField,
}, {
  additionalProperties: false,
  examples: [{ protocol: 'ap2', max_amount: 5000, budget_amount: 15000, usage: 'multi_use', expires_at: '2099-12-31T23:59:59.000Z' }],
})
export type CreateMandateInput = Static<typeof CreateMandateBody>

/**
 * Defaults no schema can state (they depend on another member), applied before the idempotency
 * fingerprint and the service. The currency of a mandate for a wish comes from the wish, so only a
 * mandate without one defaults to USD here.
 */
export function withMandateDefaults(body: CreateMandateInput): CreateMandateInput {
  return {
    ...body,
    budget_amount: body.budget_amount ?? body.max_amount,
    ...(body.currency === undefined && body.wish_id === undefined ? { currency: 'USD' } : {}),
  }
}

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
