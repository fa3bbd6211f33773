import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors, writeErrors } from '../../http/schemas.js'
import { CreateTrustedKeyBody, ListTrustedKeysQuery, RevokeTrustedKeyBody, TrustedKeyList, TrustedKeyParams, TrustedKeyRef } from './schemas.js'
import type { TrustedKeyService } from './service.js'

const tags = ['Trusted keys']

export const trustedKeyRoutes: FastifyPluginAsyncTypebox<{ trustedKeys: TrustedKeyService }> = async (app, { trustedKeys }) => {
  app.post('/trusted_keys', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'createTrustedKey',
      summary: 'Trust an issuer key',
      description: 'Registers a public key this account trusts to sign AP2 open mandates, as a Trusted Agent Provider (`trusted_agent_provider`) or a User Credential issuer (`user_credential_issuer`). The JWK needs a `kid` (unique in the account, revoked keys included: a 409 `kid_in_use` otherwise) and is EC P-256 (ES256), OKP Ed25519 (EdDSA) or RSA of 2048 bits or more (RS256, PS256). A private member (`d`, ...), a smaller RSA key, another `kty` or `crv`, or a point off the curve is a 400 naming the member (`param`: `public_jwk.d`, ...). Needs a secret key (sk_).',
      tags,
      body: CreateTrustedKeyBody,
      response: { 201: Type.Object({ data: TrustedKeyRef }, { description: 'The trusted key' }), ...writeErrors(409) },
    },
  }, async (request, reply) => {
    reply.code(201)
    return { data: await trustedKeys.create(request.ctx, request.body) }
  })

  app.get('/trusted_keys', {
    schema: {
      operationId: 'listTrustedKeys',
      summary: 'List trusted keys',
      description: 'Newest first; filter by `status` and `role`.',
      tags,
      querystring: ListTrustedKeysQuery,
      response: { 200: TrustedKeyList, ...readErrors() },
    },
  }, async (request) => trustedKeys.list(request.ctx, request.query))

  app.get('/trusted_keys/:id', {
    schema: {
      operationId: 'getTrustedKey',
      summary: 'Retrieve a trusted key',
      tags,
      params: TrustedKeyParams,
      response: { 200: Type.Object({ data: TrustedKeyRef }, { description: 'The trusted key' }), ...readErrors(404) },
    },
  }, async (request) => ({ data: await trustedKeys.get(request.ctx, request.params.id) }))

  app.post('/trusted_keys/:id/revoke', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'revokeTrustedKey',
      summary: 'Revoke a trusted key',
      description: 'For good: AP2 mandates signed by this key are refused from then on (422 `issuer_untrusted`); Wishpay mandates already made from them stay as they are (revoke those to stop them). Its `kid` stays taken. A key already revoked is a 409 `invalid_state_transition`.',
      tags,
      params: TrustedKeyParams,
      body: RevokeTrustedKeyBody,
      response: { 200: Type.Object({ data: TrustedKeyRef }, { description: 'The revoked key' }), ...writeErrors(404, 409) },
    },
  }, async (request) => ({ data: await trustedKeys.revoke(request.ctx, request.params.id) }))
}
