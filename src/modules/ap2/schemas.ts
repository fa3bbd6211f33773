import { Type, type Static } from '@sinclair/typebox'
import { IdempotencyKeyField, Nullable, Timestamp } from '../../http/schemas.js'

export const NonceSchema = Type.Object({
  nonce: Type.String({ description: 'Put it in the closed Payment Mandate\'s `nonce`; it pays once' }),
  audience: Type.String({ description: 'Put it in the closed Payment Mandate\'s `aud`: this account\'s verifier id' }),
  agent_id: Nullable(Type.String({ description: 'The agent whose key asked for it: only that agent may pay with it; null for an account key\'s nonce' })),
  expires_at: Timestamp,
  created_at: Timestamp,
}, {
  $id: 'Ap2Nonce',
  title: 'Ap2Nonce',
  examples: [{
    nonce: 'q3ZP0d8K4fY7sLx2W9cVb6NmT1hJ5gRa',
    audience: 'wishpay:acct_01jf3v7k8m2n4p6q8r0s2t4v6w',
    agent_id: 'agt_01jf3v7k8m2n4p6q8r0s2t4v6w',
    expires_at: '2026-11-22T10:05:00.000Z',
    created_at: '2026-11-22T10:00:00.000Z',
  }],
})
export type Nonce = Static<typeof NonceSchema>
export const NonceRef = Type.Ref(NonceSchema.$id!)

export const CreateNonceBody = Type.Object({ idempotency_key: IdempotencyKeyField }, { additionalProperties: false, examples: [{}] })
