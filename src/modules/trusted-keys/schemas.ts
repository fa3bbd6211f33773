import { Type, type Static } from '@sinclair/typebox'
import { IdempotencyKeyField, IdParams, ListMeta, Nullable, PageQuery, StringEnum, Timestamp } from '../../http/schemas.js'

/** AP2 issuers of open mandates, and ACP clients whose requests are signed (acp_client: EC P-256 or Ed25519 only). */
export const TRUSTED_KEY_ROLES = ['trusted_agent_provider', 'user_credential_issuer', 'acp_client'] as const
export type TrustedKeyRoleValue = (typeof TRUSTED_KEY_ROLES)[number]
export const TRUSTED_KEY_STATUSES = ['active', 'revoked'] as const
export type TrustedKeyStatus = (typeof TRUSTED_KEY_STATUSES)[number]

const Member = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description }))

/**
 * A JWK as sent: the members of EC, OKP and RSA public keys, plus the private members, which are
 * listed only so that the service can refuse them by name (400 `public_jwk.d`).
 */
export const TrustedJwkInput = Type.Object({
  kty: Type.String({ minLength: 1, maxLength: 10, description: 'EC (crv P-256, ES256), OKP (crv Ed25519, EdDSA) or RSA (2048 bits or more, RS256/PS256)' }),
  kid: Type.String({ minLength: 1, maxLength: 255, description: 'The key id a mandate\'s JWT header names; unique in the account' }),
  crv: Member('P-256 (EC) or Ed25519 (OKP)'),
  x: Member('base64url coordinate (EC, OKP)'),
  y: Member('base64url coordinate (EC)'),
  n: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'base64url modulus (RSA)' })),
  e: Member('base64url exponent (RSA)'),
  alg: Member('ES256, EdDSA, RS256 or PS256; must fit the key'),
  use: Type.Optional(StringEnum(['sig'] as const)),
  d: Member('refused: a private key member'),
  p: Member('refused: a private key member'),
  q: Member('refused: a private key member'),
  dp: Member('refused: a private key member'),
  dq: Member('refused: a private key member'),
  qi: Member('refused: a private key member'),
}, {
  additionalProperties: false,
  description: 'A public JWK with a kid. Private members (d, p, q, dp, dq, qi) are a 400.',
  examples: [{ kty: 'EC', crv: 'P-256', kid: 'agent-provider-key-1', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' }],
})
export type TrustedJwkInputValue = Static<typeof TrustedJwkInput>

export const StoredPublicJwk = Type.Object({
  kty: Type.String(),
  kid: Type.String(),
  crv: Type.Optional(Type.String()),
  x: Type.Optional(Type.String()),
  y: Type.Optional(Type.String()),
  n: Type.Optional(Type.String()),
  e: Type.Optional(Type.String()),
  alg: Type.Optional(Type.String()),
  use: Type.Optional(Type.String()),
}, { description: 'The public key, public members only' })
export type StoredPublicJwkValue = Static<typeof StoredPublicJwk>

export const TrustedKeySchema = Type.Object({
  id: Type.String({ examples: ['tk_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  kid: Type.String(),
  role: StringEnum(TRUSTED_KEY_ROLES, { description: 'trusted_agent_provider or user_credential_issuer (AP2 agent_authorization.md: may sign open mandates), or acp_client (signs ACP delegate_payment requests: then every such request must carry a valid Signature)' }),
  public_jwk: StoredPublicJwk,
  status: StringEnum(TRUSTED_KEY_STATUSES, { description: 'active, or revoked (mandates it signs are refused from then on)' }),
  description: Nullable(Type.String()),
  created_at: Timestamp,
  revoked_at: Nullable(Timestamp),
}, {
  $id: 'TrustedKey',
  title: 'TrustedKey',
  examples: [{
    id: 'tk_01jf3v7k8m2n4p6q8r0s2t4v6w',
    kid: 'agent-provider-key-1',
    role: 'trusted_agent_provider',
    public_jwk: { kty: 'EC', crv: 'P-256', kid: 'agent-provider-key-1', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' },
    status: 'active',
    description: 'Our shopping agent provider',
    created_at: '2026-11-22T10:00:00.000Z',
    revoked_at: null,
  }],
})
export type TrustedKey = Static<typeof TrustedKeySchema>
export const TrustedKeyRef = Type.Ref(TrustedKeySchema.$id!)

export const CreateTrustedKeyBody = Type.Object({
  public_jwk: TrustedJwkInput,
  role: StringEnum(TRUSTED_KEY_ROLES),
  description: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  idempotency_key: IdempotencyKeyField,
}, {
  additionalProperties: false,
  examples: [{
    role: 'trusted_agent_provider',
    public_jwk: { kty: 'EC', crv: 'P-256', kid: 'agent-provider-key-1', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' },
  }],
})
export type CreateTrustedKeyInput = Static<typeof CreateTrustedKeyBody>

export const RevokeTrustedKeyBody = Type.Object({ idempotency_key: IdempotencyKeyField }, { additionalProperties: false, examples: [{}] })

export const ListTrustedKeysQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(StringEnum(TRUSTED_KEY_STATUSES)),
  role: Type.Optional(StringEnum(TRUSTED_KEY_ROLES)),
}, { additionalProperties: false })
export type ListTrustedKeysInput = Static<typeof ListTrustedKeysQuery>

export const TrustedKeyParams = IdParams
export const TrustedKeyList = Type.Object({ data: Type.Array(TrustedKeyRef), meta: ListMeta }, { description: 'A page of trusted keys' })
