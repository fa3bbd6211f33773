import { Type, type Static } from '@sinclair/typebox'
import { IdempotencyKeyField, IdParams, ListMeta, Metadata, Nullable, PageQuery, StringEnum, Timestamp } from '../../http/schemas.js'

export const AGENT_STATUSES = ['active', 'disabled'] as const
export type AgentStatus = (typeof AGENT_STATUSES)[number]

const Base64Url = (description: string) => Type.String({ minLength: 1, maxLength: 512, pattern: '^[A-Za-z0-9_-]+$', description })

/**
 * A public JWK: EC P-256 (`x`, `y`) or OKP Ed25519 (`x`). Members of a private key (`d`) are refused
 * (400), as is anything else a public key of these kinds does not have.
 */
export const PublicJwk = Type.Object({
  kty: StringEnum(['EC', 'OKP'] as const, { description: 'EC (with crv P-256) or OKP (with crv Ed25519)' }),
  crv: StringEnum(['P-256', 'Ed25519'] as const),
  x: Base64Url('base64url public coordinate'),
  y: Type.Optional(Base64Url('base64url public coordinate (EC only)')),
  kid: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  alg: Type.Optional(StringEnum(['ES256', 'EdDSA'] as const)),
  use: Type.Optional(StringEnum(['sig'] as const)),
}, {
  additionalProperties: false,
  description: 'The agent\'s public key, which an AP2 mandate\'s `cnf` names: EC P-256 or OKP Ed25519, public members only',
  examples: [{ kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' }],
})
export type PublicJwkValue = Static<typeof PublicJwk>

export const AgentSchema = Type.Object({
  id: Type.String({ examples: ['agt_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  name: Type.String(),
  status: StringEnum(AGENT_STATUSES, { description: 'active, or disabled (its keys stop working; it can be granted nothing more)' }),
  metadata: Metadata,
  public_jwk: Nullable(PublicJwk),
  created_at: Timestamp,
  updated_at: Timestamp,
}, {
  $id: 'Agent',
  title: 'Agent',
  examples: [{
    id: 'agt_01jf3v7k8m2n4p6q8r0s2t4v6w',
    name: 'Shopping assistant',
    status: 'active',
    metadata: {},
    public_jwk: null,
    created_at: '2026-11-22T10:00:00.000Z',
    updated_at: '2026-11-22T10:00:00.000Z',
  }],
})
export type Agent = Static<typeof AgentSchema>
export const AgentRef = Type.Ref(AgentSchema.$id!)

export const CreateAgentBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, description: 'What people call the agent' }),
  metadata: Type.Optional(Metadata),
  public_jwk: Type.Optional(PublicJwk),
  idempotency_key: IdempotencyKeyField,
}, { additionalProperties: false, examples: [{ name: 'Shopping assistant' }] })
export type CreateAgentInput = Static<typeof CreateAgentBody>

export const DisableAgentBody = Type.Object({ idempotency_key: IdempotencyKeyField }, { additionalProperties: false, examples: [{}] })
export const CreateAgentKeyBody = Type.Object({ idempotency_key: IdempotencyKeyField }, { additionalProperties: false, examples: [{}] })

export const AgentKeySchema = Type.Object({
  id: Type.String({ examples: ['key_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  key: Type.String({ description: 'The secret (ak_…): shown only here' }),
  account_id: Type.String(),
  scope: StringEnum(['agent'] as const),
  agent_id: Type.String(),
}, { description: 'A new agent key' })

export const ListAgentsQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(StringEnum(AGENT_STATUSES)),
}, { additionalProperties: false })
export type ListAgentsInput = Static<typeof ListAgentsQuery>

export const AgentParams = IdParams
export const AgentList = Type.Object({ data: Type.Array(AgentRef), meta: ListMeta }, { description: 'A page of agents' })
