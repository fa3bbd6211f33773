import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors } from '../../http/schemas.js'
import { EventList, EventParams, EventRef, ListEventsQuery } from './schemas.js'
import type { EventService } from './service.js'

const tags = ['Events']

export const eventRoutes: FastifyPluginAsyncTypebox<{ events: EventService }> = async (app, { events }) => {
  app.get('/events', {
    schema: {
      operationId: 'listEvents',
      summary: 'List events',
      description: 'Every state change of the account, newest first, kept 30 days; filter by `type`.',
      tags,
      querystring: ListEventsQuery,
      response: { 200: EventList, ...readErrors() },
    },
  }, async (request) => events.list(request.ctx, request.query))

  app.get('/events/:id', {
    schema: {
      operationId: 'getEvent',
      summary: 'Retrieve an event',
      tags,
      params: EventParams,
      response: { 200: Type.Object({ data: EventRef }, { description: 'The event' }), ...readErrors(404) },
    },
  }, async (request) => ({ data: await events.get(request.ctx, request.params.id) }))
}
