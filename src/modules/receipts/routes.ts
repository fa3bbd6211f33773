import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors } from '../../http/schemas.js'
import { Jwks, ReceiptParams, ReceiptSchema } from './schemas.js'
import type { ReceiptService } from './service.js'

/** Clients may keep the JWKS five minutes; a retired key stays published 30 days, far longer. */
const JWKS_CACHE_CONTROL = 'public, max-age=300'

/** GET /payments/:id/receipt, in the authenticated API scope (agent keys included, their own payments only). */
export const receiptRoutes: FastifyPluginAsyncTypebox<{ receipts: ReceiptService }> = async (app, { receipts }) => {
  app.get('/payments/:id/receipt', {
    schema: {
      operationId: 'getPaymentReceipt',
      summary: 'Retrieve a payment\'s AP2 receipt',
      description: 'The AP2 PaymentReceipt of a payment made with an AP2 closed mandate: an ES256 JWT signed by Wishpay (verify it with `GET /.well-known/jwks.json`), `status` Success for a succeeded or refunded payment, Error for a failed one. It is signed on the first read after the payment is final and every later read answers the same receipt. A payment not made with an AP2 mandate, or not in your account (an agent key: not on its agent\'s mandates), is a 404 `resource_missing`; a payment still pending or processing is a 409 `invalid_state_transition` (retry once it is final).',
      tags: ['Payments'],
      params: ReceiptParams,
      response: { 200: Type.Object({ data: ReceiptSchema }, { description: 'The receipt' }), ...readErrors(404, 409) },
    },
  }, async (request) => ({ data: await receipts.get(request.ctx, request.params.id) }))
}

/** GET /.well-known/jwks.json: open, like the health routes. */
export const jwksRoutes: FastifyPluginAsyncTypebox<{ receipts: Pick<ReceiptService, 'jwks'> }> = async (app, { receipts }) => {
  app.get('/.well-known/jwks.json', {
    schema: {
      operationId: 'getJwks',
      summary: 'Wishpay\'s public keys',
      description: 'The JWK Set that AP2 receipts verify with: the active keys, and keys retired less than 30 days ago (so receipts they signed still verify). No authentication; cacheable for 5 minutes.',
      tags: ['System'],
      security: [],
      response: { 200: Jwks },
    },
  }, async (_request, reply) => {
    const jwks = await receipts.jwks()
    reply.header('Cache-Control', JWKS_CACHE_CONTROL)
    return jwks
  })
}
