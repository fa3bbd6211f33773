import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors, writeErrors } from '../../http/schemas.js'
import { CreateMandateBody, ListMandatesQuery, MandateList, MandateParams, MandateRef, RevokeMandateBody, withMandateDefaults } from './schemas.js'
import type { MandateService } from './service.js'

const tags = ['Mandates']

export const mandateRoutes: FastifyPluginAsyncTypebox<{ mandates: MandateService }> = async (app, { mandates }) => {
  app.post('/mandates', {
    config: { idempotency: 'optional', bodyDefaults: withMandateDefaults },
    schema: {
      operationId: 'createMandate',
      summary: 'Create a mandate',
      description: 'Grants an agent a bounded authority to spend: at most `max_amount` per payment and `budget_amount` in all, until `expires_at`. With `wish_id`, the wish must be open (else 422 `wish_not_usable`), share the protocol (`protocol_mismatch`), and `budget_amount` may not exceed its budget (`wish_budget_exceeded`); the wish\'s budget currency becomes the mandate\'s (`currency_mismatch` if another is sent). With `ap2.open_payment_mandate` the terms come from an AP2 open Payment Mandate signed by a trusted key (refusals: `issuer_untrusted`, `mandate_signature_invalid`, `disclosure_invalid`, `mandate_expired`, `constraint_unsupported`, … as 422 `payment_error`, `mandate_malformed` as 400); one open mandate makes one mandate (`mandate_replayed`).',
      tags,
      body: CreateMandateBody,
      response: { 201: Type.Object({ data: MandateRef }, { description: 'The new mandate' }), ...writeErrors(422) },
    },
  }, async (request, reply) => {
    reply.code(201)
    return { data: await mandates.create(request.ctx, request.body) }
  })

  app.get('/mandates', {
    schema: {
      operationId: 'listMandates',
      summary: 'List mandates',
      description: 'Newest first; filter by `status` (as read: an active mandate past `expires_at` is `expired`) and `wish_id`.',
      tags,
      querystring: ListMandatesQuery,
      response: { 200: MandateList, ...readErrors() },
    },
  }, async (request) => mandates.list(request.ctx, request.query))

  app.get('/mandates/:id', {
    schema: {
      operationId: 'getMandate',
      summary: 'Retrieve a mandate',
      tags,
      params: MandateParams,
      response: { 200: Type.Object({ data: MandateRef }, { description: 'The mandate' }), ...readErrors(404) },
    },
  }, async (request) => ({ data: await mandates.get(request.ctx, request.params.id) }))

  app.post('/mandates/:id/revoke', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'revokeMandate',
      summary: 'Revoke a mandate',
      description: 'Stops all further payments. Only an active mandate can be revoked (else 409 `invalid_state_transition`).',
      tags,
      params: MandateParams,
      body: RevokeMandateBody,
      response: { 200: Type.Object({ data: MandateRef }, { description: 'The revoked mandate' }), ...writeErrors(404, 409) },
    },
  }, async (request) => ({ data: await mandates.revoke(request.ctx, request.params.id) }))
}
