import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors, writeErrors } from '../../http/schemas.js'
import {
  CreatePaymentBody, type CreatePaymentInput, CreateRefundBody, ListPaymentsQuery, ListRefundsQuery, PaymentList, PaymentParams, PaymentRef, RefundList, RefundRef,
  SettlePaymentBody,
} from './schemas.js'
import type { PaymentService } from './service.js'

const tags = ['Payments']
const IDEMPOTENCY = 'A payment operation: `idempotency_key` (body) or `Idempotency-Key` (header) is required. A retry with the same key and request replays the first answer byte for byte with `Idempotent-Replayed: true`; the same key with another request is 422 `idempotency_key_reused`; while the first is still running, 409 `idempotency_key_in_use`.'

export const paymentRoutes: FastifyPluginAsyncTypebox<{ payments: PaymentService }> = async (app, { payments }) => {
  app.post('/payments', {
    config: {
      idempotency: {
        mode: 'required',
        oneWrite: (request, pending) => payments.createInOneWrite(request.ctx, request.body as CreatePaymentInput, pending),
      },
    },
    schema: {
      operationId: 'createPayment',
      summary: 'Create a payment',
      description: `Pays against a mandate. The mandate is checked atomically, in this order, and the first failure answers 422 \`payment_error\`: \`mandate_not_found\`, \`mandate_revoked\`, \`mandate_expired\`, \`mandate_not_yet_valid\`, \`mandate_consumed\`, \`currency_mismatch\`, \`amount_exceeds_mandate\`, \`mandate_budget_exceeded\`. On a mandate made from an AP2 open mandate, the hold also checks its least amount, \`max_occurrences\` and recurrence window (\`constraint_unsatisfied\`, \`param\` the constraint), and the payment needs \`ap2.payment_mandate\` (\`ap2_mandate_required\`), a closed mandate verified as its description says; each closed mandate pays once (\`mandate_replayed\`). A declined payment is still a 201, with \`status: failed\`. ${IDEMPOTENCY}`,
      tags,
      body: CreatePaymentBody,
      response: { 201: Type.Object({ data: PaymentRef }, { description: 'The payment' }), ...writeErrors(409, 422) },
    },
  }, async (request, reply) => {
    reply.code(201)
    return { data: await payments.create(request.ctx, request.body) }
  })

  app.get('/payments', {
    schema: {
      operationId: 'listPayments',
      summary: 'List payments',
      description: 'Newest first; filter by `status`, `mandate_id`, `wish_id`.',
      tags,
      querystring: ListPaymentsQuery,
      response: { 200: PaymentList, ...readErrors() },
    },
  }, async (request) => payments.list(request.ctx, request.query))

  app.get('/payments/:id', {
    schema: {
      operationId: 'getPayment',
      summary: 'Retrieve a payment',
      tags,
      params: PaymentParams,
      response: { 200: Type.Object({ data: PaymentRef }, { description: 'The payment' }), ...readErrors(404) },
    },
  }, async (request) => ({ data: await payments.get(request.ctx, request.params.id) }))

  app.post('/payments/:id/refunds', {
    config: { idempotency: 'required' },
    schema: {
      operationId: 'createRefund',
      summary: 'Refund a payment',
      description: `Refunds all that remains (the default) or part of a succeeded payment; the payment becomes \`refunded\` when nothing remains. 422 \`payment_not_refundable\` for a payment that is not succeeded, \`refund_exceeds_payment\` for more than remains. Refunds never give budget back to the mandate. ${IDEMPOTENCY}`,
      tags,
      params: PaymentParams,
      body: CreateRefundBody,
      response: { 201: Type.Object({ data: RefundRef }, { description: 'The refund' }), ...writeErrors(404, 409, 422) },
    },
  }, async (request, reply) => {
    reply.code(201)
    return { data: await payments.refund(request.ctx, request.params.id, request.body) }
  })

  app.post('/payments/:id/settle', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'settlePayment',
      summary: 'Settle a sandbox payment now',
      description: 'A test convenience of the sandbox processor: a `pending` or `processing` payment (`bank_transfer`, `test_bank_transfer_failed`) settles at once instead of after `SANDBOX_SETTLEMENT_DELAY_MS`, through the settlement job\'s own steps: `payment.processing` (if it was pending), then `payment.succeeded` or `payment.failed` (`test_bank_transfer_failed`: `bank_transfer_failed`), with their webhooks, and the mandate consumed or released as the job would. 200 with the settled payment. A payment already final is 409 `invalid_state_transition` (a retry with the same idempotency key replays the first answer instead); a server whose processor is not the sandbox answers 400 `sandbox_only`. An idempotency key is optional, as on every POST that is not a payment operation.',
      tags,
      params: PaymentParams,
      body: SettlePaymentBody,
      response: { 200: Type.Object({ data: PaymentRef }, { description: 'The settled payment' }), ...writeErrors(404, 409) },
    },
  }, async (request) => ({ data: await payments.settleNow(request.ctx, request.params.id) }))

  app.get('/payments/:id/refunds', {
    schema: {
      operationId: 'listRefunds',
      summary: 'List a payment\'s refunds',
      tags,
      params: PaymentParams,
      querystring: ListRefundsQuery,
      response: { 200: RefundList, ...readErrors(404) },
    },
  }, async (request) => payments.listRefunds(request.ctx, request.params.id, request.query))
}
