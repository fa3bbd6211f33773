import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors, writeErrors } from '../../http/schemas.js'
import {
  CreatedWebhookEndpointSchema, CreateWebhookEndpointBody, DeliveryAttemptList, DeliveryResendSchema, ListWebhookEndpointsQuery,
  ResendDeliveryBody, ResendDeliveryParams, UpdateWebhookEndpointBody, WebhookEndpointList, WebhookEndpointParams, WebhookEndpointRef,
} from './schemas.js'
import { MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT, type WebhookService } from './service.js'

const tags = ['Webhooks']

export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  app.post('/webhook_endpoints', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'createWebhookEndpoint',
      summary: 'Create a webhook endpoint',
      description: `Events of the listed types (or all, with \`["*"]\`) are POSTed to \`url\`, signed per Standard Webhooks v1 with the \`secret\` returned here and nowhere else. Private, loopback, link-local and multicast targets are refused unless WEBHOOK_ALLOW_PRIVATE is set. An account may have at most ${MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT} endpoints: one more is a 400 \`resource_limit_exceeded\`.`,
      tags,
      body: CreateWebhookEndpointBody,
      response: { 201: Type.Object({ data: Type.Ref(CreatedWebhookEndpointSchema.$id!) }, { description: 'The endpoint, with its secret' }), ...writeErrors() },
    },
  }, async (request, reply) => {
    reply.code(201)
    return { data: await webhooks.create(request.ctx, request.body) }
  })

  app.get('/webhook_endpoints', {
    schema: {
      operationId: 'listWebhookEndpoints',
      summary: 'List webhook endpoints',
      tags,
      querystring: ListWebhookEndpointsQuery,
      response: { 200: WebhookEndpointList, ...readErrors() },
    },
  }, async (request) => webhooks.list(request.ctx, request.query))

  app.get('/webhook_endpoints/:id', {
    schema: {
      operationId: 'getWebhookEndpoint',
      summary: 'Retrieve a webhook endpoint',
      tags,
      params: WebhookEndpointParams,
      response: { 200: Type.Object({ data: WebhookEndpointRef }, { description: 'The endpoint (without its secret)' }), ...readErrors(404) },
    },
  }, async (request) => ({ data: await webhooks.get(request.ctx, request.params.id) }))

  app.put('/webhook_endpoints/:id', {
    schema: {
      operationId: 'updateWebhookEndpoint',
      summary: 'Update a webhook endpoint',
      description: 'Partial: `url`, `events`, `enabled`, `description`. `enabled: true` re-enables an endpoint disabled after a 410.',
      tags,
      params: WebhookEndpointParams,
      body: UpdateWebhookEndpointBody,
      response: { 200: Type.Object({ data: WebhookEndpointRef }, { description: 'The endpoint after the update' }), ...writeErrors(404) },
    },
  }, async (request) => ({ data: await webhooks.update(request.ctx, request.params.id, request.body) }))

  app.delete('/webhook_endpoints/:id', {
    schema: {
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint',
      tags,
      params: WebhookEndpointParams,
      response: { 204: Type.Null({ description: 'Deleted; no body' }), ...writeErrors(404) },
    },
  }, async (request, reply) => {
    await webhooks.remove(request.ctx, request.params.id)
    return reply.status(204).send(null)
  })

  app.get('/webhook_endpoints/:id/deliveries', {
    schema: {
      operationId: 'listWebhookDeliveries',
      summary: 'List delivery attempts',
      description: 'Every attempt to deliver an event to this endpoint, newest first: event, status code, error, time and next retry.',
      tags,
      params: WebhookEndpointParams,
      querystring: ListWebhookEndpointsQuery,
      response: { 200: DeliveryAttemptList, ...readErrors(404) },
    },
  }, async (request) => webhooks.deliveries(request.ctx, request.params.id, request.query))

  app.post('/webhook_deliveries/:id/resend', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'resendWebhookDelivery',
      summary: 'Resend a webhook delivery',
      description: 'Sends the event of a delivery attempt (`wha_…`, from the endpoint\'s deliveries) to its endpoint again, at once, '
        + 'signed anew; the new attempt appears in the endpoint\'s deliveries. Each call schedules one delivery (send an '
        + 'idempotency key to make a retry safe). A disabled endpoint is a 409 `invalid_state_transition`; an event past its '
        + '30 days, a 404.',
      tags,
      params: ResendDeliveryParams,
      body: ResendDeliveryBody,
      response: { 202: Type.Object({ data: Type.Ref(DeliveryResendSchema.$id!) }, { description: 'The delivery, scheduled' }), ...writeErrors(404, 409) },
    },
  }, async (request, reply) => {
    reply.code(202)
    return { data: await webhooks.resend(request.ctx, request.params.id) }
  })
}
