import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors, writeErrors } from '../../http/schemas.js'
import { CreateWishBody, ListWishesQuery, UpdateWishBody, WishList, WishParams, WishRef } from './schemas.js'
import type { WishService } from './service.js'

const tags = ['Wishes']

export const wishRoutes: FastifyPluginAsyncTypebox<{ wishes: WishService }> = async (app, { wishes }) => {
  app.post('/wishes', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'createWish',
      summary: 'Create a wish',
      description: 'Creates a wish in `active` status. `protocol: auto` (the default) is resolved to the default protocol, so the stored value is always `ap2` or `acp`. An optional `idempotency_key` (or `Idempotency-Key` header) makes a retry replay the first answer.',
      tags,
      body: CreateWishBody,
      response: { 201: Type.Object({ data: WishRef }, { description: 'The new wish' }), ...writeErrors() },
    },
  }, async (request, reply) => {
    reply.code(201)
    return { data: await wishes.create(request.ctx, request.body) }
  })

  app.get('/wishes', {
    schema: {
      operationId: 'listWishes',
      summary: 'List wishes',
      description: 'Newest first. `status` filters on the status a reader sees, so a wish past its `expires_at` is listed as `expired`.',
      tags,
      querystring: ListWishesQuery,
      response: { 200: Type.Object({ ...WishList.properties }, { description: 'A page of wishes' }), ...readErrors() },
    },
  }, async (request) => wishes.list(request.ctx, request.query))

  app.get('/wishes/:id', {
    schema: {
      operationId: 'getWish',
      summary: 'Retrieve a wish',
      tags,
      params: WishParams,
      response: { 200: Type.Object({ data: WishRef }, { description: 'The wish' }), ...readErrors(404) },
    },
  }, async (request) => ({ data: await wishes.get(request.ctx, request.params.id) }))

  app.put('/wishes/:id', {
    schema: {
      operationId: 'updateWish',
      summary: 'Update a wish',
      description: 'Partial update: only the members sent change. `budget` is replaced (`null` clears it); `metadata` is merged and a key set to `null` is removed. Status moves: active -> pending|fulfilled|cancelled|expired, pending -> active|fulfilled|cancelled|expired; fulfilled, cancelled and expired are final and then only `metadata` may change. `agent_id` assigns the wish to an active agent of the account (else 422 `agent_not_usable`): a `pending` wish (waiting for agent assignment) becomes `active` unless the request also names a `status`; `agent_id: null` unassigns and leaves the status as it is. A wish without an agent has no `agent_id` member.',
      tags,
      params: WishParams,
      body: UpdateWishBody,
      response: { 200: Type.Object({ data: WishRef }, { description: 'The wish after the update' }), ...writeErrors(404, 409, 422) },
    },
  }, async (request) => ({ data: await wishes.update(request.ctx, request.params.id, request.body) }))

  app.delete('/wishes/:id', {
    schema: {
      operationId: 'deleteWish',
      summary: 'Delete a wish',
      tags,
      params: WishParams,
      response: { 204: Type.Null({ description: 'Deleted; no body' }), ...writeErrors(404) },
    },
  }, async (request, reply) => {
    await wishes.remove(request.ctx, request.params.id)
    return reply.status(204).send(null)
  })
}
