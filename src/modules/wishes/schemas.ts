import { Type, type Static } from '@sinclair/typebox'
import { CurrencyCode, IdempotencyKeyField, IdParams, ListMeta, Metadata, MetadataPatch, Nullable, PageQuery, StringEnum, Timestamp } from '../../http/schemas.js'
import { WISH_STATUSES } from './transitions.js'


const BudgetInput = Type.Object({
  max: Type.Optional(Type.Number({
    minimum: 0,
    maximum: 1e12,
    description: 'Maximum to spend, in major units (199.99); no more decimals than the currency has',
  })),
  currency: Type.Optional(CurrencyCode({ description: 'ISO 4217 code, any case; returned upper-case. Default USD.' })),
}, { additionalProperties: false })

const Query = Type.String({ minLength: 1, maxLength: 2000, pattern: '\\S', description: 'What to obtain, in plain words; trimmed, 1..2000 characters' })
const Category = Type.String({ minLength: 1, maxLength: 100, description: 'Product category, 1..100 characters' })
const ExpiresAt = Type.String({ format: 'date-time', description: 'When the wish lapses; must be in the future' })

const WishStatus = StringEnum(WISH_STATUSES, { description: 'active, pending, fulfilled, cancelled or expired' })

export const WishSchema = Type.Object({
  id: Type.String({ examples: ['wish_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  status: WishStatus,
  query: Type.String(),
  budget: Nullable(Type.Object({ max: Nullable(Type.Number()), currency: Type.String() })),
  protocol: StringEnum(['ap2', 'acp'] as const, { description: 'The concrete protocol; auto is resolved on create' }),
  category: Nullable(Type.String()),
  metadata: Metadata,
  expires_at: Nullable(Timestamp),
  agent_id: Type.Optional(Type.String({ description: 'The agent the wish is assigned to; absent when none is' })),
  created_at: Timestamp,
  updated_at: Timestamp,
}, {
  $id: 'Wish',
  title: 'Wish',
  examples: [{
    id: 'wish_01jf3v7k8m2n4p6q8r0s2t4v6w',
    status: 'active',
    query: 'Noise-cancelling headphones under $200',
    budget: { max: 199.99, currency: 'USD' },
    protocol: 'ap2',
    category: 'electronics',
    metadata: { order_ref: 'A-1001' },
    expires_at: null,
    created_at: '2026-11-22T10:00:00.000Z',
    updated_at: '2026-11-22T10:00:00.000Z',
  }],
})
export type Wish = Static<typeof WishSchema>

export const WishRef = Type.Ref(WishSchema.$id!)

export const CreateWishBody = Type.Object({
  query: Query,
  budget: Type.Optional(Nullable(BudgetInput)),
  protocol: Type.Optional(StringEnum(['ap2', 'acp', 'auto'] as const, { default: 'auto', description: 'ap2, acp, or auto (the default protocol)' })),
  category: Type.Optional(Nullable(Category)),
  metadata: Type.Optional(Metadata),
  expires_at: Type.Optional(Nullable(ExpiresAt)),
  idempotency_key: IdempotencyKeyField,
}, {
  additionalProperties: false,
  examples: [{
    query: 'Noise-cancelling headphones under $200',
    budget: { max: 199.99, currency: 'usd' },
    protocol: 'auto',
    category: 'electronics',
    metadata: { order_ref: 'A-1001' },
  }],
})
export type CreateWishInput = Static<typeof CreateWishBody>

export const UpdateWishBody = Type.Object({
  query: Type.Optional(Query),
  budget: Type.Optional(Nullable(BudgetInput)),
  status: Type.Optional(WishStatus),
  metadata: Type.Optional(Nullable(MetadataPatch)),
  category: Type.Optional(Nullable(Category)),
  expires_at: Type.Optional(Nullable(ExpiresAt)),
  agent_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 255, description: 'Assigns the wish to this active agent (a pending wish becomes active); null unassigns' }))),
}, {
  additionalProperties: false,
  examples: [{ status: 'pending', metadata: { order_ref: null, agent: 'shopper-7' } }],
})
export type UpdateWishInput = Static<typeof UpdateWishBody>

export const ListWishesQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(WishStatus),
}, { additionalProperties: false })
export type ListWishesInput = Static<typeof ListWishesQuery>

export const WishParams = IdParams

export const WishList = Type.Object({ data: Type.Array(WishRef), meta: ListMeta })
