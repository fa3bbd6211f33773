import { Type, type Static } from '@sinclair/typebox'
import { IdParams, StringEnum, Timestamp } from '../../http/schemas.js'

/** The public half of one of Wishpay's signing keys, as published. */
export const PublicSigningJwkSchema = Type.Object({
  kty: Type.String({ description: 'EC' }),
  crv: Type.String({ description: 'P-256' }),
  x: Type.String(),
  y: Type.String(),
  kid: Type.String({ description: 'The JWK thumbprint (RFC 7638, SHA-256); a receipt\'s JWT header names it' }),
  alg: StringEnum(['ES256'] as const),
  use: StringEnum(['sig'] as const),
})

const EXAMPLE_KID = 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs'

export const Jwks = Type.Object({
  keys: Type.Array(PublicSigningJwkSchema, { description: 'Active keys, and keys retired less than 30 days ago' }),
}, {
  description: 'Wishpay\'s public keys (RFC 7517 JWK Set)',
  examples: [{ keys: [{ kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', kid: EXAMPLE_KID, alg: 'ES256', use: 'sig' }] }],
})
export type JwksValue = Static<typeof Jwks>

/** The payload of an AP2 PaymentReceipt (ap2-v0.2 payment_receipt.json). */
export const ReceiptClaims = Type.Object({
  iss: Type.String({ description: 'Wishpay\'s issuer id: urn:wishpay:psp' }),
  iat: Type.Integer({ description: 'When the receipt was signed, in seconds since the epoch' }),
  status: StringEnum(['Success', 'Error'] as const, { description: 'Success for a succeeded or refunded payment, Error for a failed one' }),
  reference: Type.String({ description: 'The base64url SHA-256 of the closed mandate the payment was made with' }),
  payment_id: Type.String(),
  psp_confirmation_id: Type.Optional(Type.String({ description: 'Success only: the Wishpay payment id' })),
  network_confirmation_id: Type.Optional(Type.String({ description: 'Success only: net_ followed by the Wishpay payment id' })),
  error: Type.Optional(Type.String({ description: 'Error only: the payment\'s failure_code' })),
  error_description: Type.Optional(Type.String({ description: 'Error only: the payment\'s failure_message' })),
})
export type ReceiptClaimsValue = Static<typeof ReceiptClaims>

export const ReceiptSchema = Type.Object({
  payment_id: Type.String(),
  receipt: Type.String({ description: 'The compact JWS (ES256, header kid and typ JWT): verify it with GET /.well-known/jwks.json' }),
  kid: Type.String({ description: 'The signing key' }),
  claims: ReceiptClaims,
  created_at: Timestamp,
}, {
  description: 'The signed AP2 PaymentReceipt',
  examples: [{
    payment_id: 'pay_01jf3v7k8m2n4p6q8r0s2t4v6w',
    receipt: 'eyJhbGciOiJFUzI1NiIsImtpZCI6Ik56YkxzWGg4dURDY2QtNk1Od1hGNFdfN25vV1hGWkFmSGt4WnNSR0M5WHMiLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiJ1cm46d2lzaHBheTpwc3AifQ.c2lnbmF0dXJl',
    kid: EXAMPLE_KID,
    claims: {
      iss: 'urn:wishpay:psp',
      iat: 1795860000,
      status: 'Success',
      reference: 'n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg',
      payment_id: 'pay_01jf3v7k8m2n4p6q8r0s2t4v6w',
      psp_confirmation_id: 'pay_01jf3v7k8m2n4p6q8r0s2t4v6w',
      network_confirmation_id: 'net_pay_01jf3v7k8m2n4p6q8r0s2t4v6w',
    },
    created_at: '2026-11-22T10:00:00.000Z',
  }],
})
export type Receipt = Static<typeof ReceiptSchema>

export const ReceiptParams = IdParams
