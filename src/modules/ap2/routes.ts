import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { writeErrors } from '../../http/schemas.js'
import type { NonceService } from './nonces.js'
import { CreateNonceBody, NonceRef } from './schemas.js'

export const ap2Routes: FastifyPluginAsyncTypebox<{ nonces: NonceService }> = async (app, { nonces }) => {
  app.post('/ap2/nonces', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'createAp2Nonce',
      summary: 'Get a nonce for an AP2 closed mandate',
      description: 'A fresh nonce and this account\'s `audience`. The agent signs them into its closed Payment Mandate (`nonce`, `aud`) and pays with it within 5 minutes; a nonce pays once (422 `nonce_invalid` when unknown, used or lapsed). A nonce asked for with an agent key (ak_) serves that agent only.',
      tags: ['AP2'],
      body: CreateNonceBody,
      response: { 201: Type.Object({ data: NonceRef }, { description: 'The nonce' }), ...writeErrors() },
    },
  }, async (request, reply) => {
    reply.code(201)
    return { data: await nonces.create(request.ctx) }
  })
}
