import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors } from '../../http/schemas.js'
import { EventList, EventParams, EventRef, EventStreamQuery, EventStreamResponse, ListEventsQuery } from './schemas.js'
import type { EventService } from './service.js'
import { HEARTBEAT_MS, sendEventStream } from './stream-response.js'
import { type EventStreams, MAX_STREAMS_PER_ACCOUNT } from './stream.js'

const tags = ['Events']

export const eventRoutes: FastifyPluginAsyncTypebox<{ events: EventService, streams: EventStreams }> = async (app, { events, streams }) => {
  // Streams never end on their own: a closing server ends them, so that its close does not wait on them.
  app.addHook('preClose', (done) => {
    streams.closeAll()
    done()
  })

  app.get('/events/stream', {
    schema: {
      operationId: 'streamEvents',
      summary: 'Stream events (server-sent events)',
      description: 'The account\'s events as they happen, as `text/event-stream`: each message has `id:` the event id, '
        + '`event:` its type and `data:` the event exactly as `GET /events/{id}` returns it. The first message carries only '
        + '`retry:` and `id:` (the position the stream starts after). To resume, send the last id received as `Last-Event-ID` '
        + '(EventSource does so on reconnection) or `starting_after`: every later event follows, none twice. Without either, '
        + `the stream starts at the moment of connection. Events arrive about 2 s after they happen (EVENT_STREAM_SETTLE_MS; `
        + `the stream looks every EVENT_STREAM_POLL_MS, 500 ms, and sends an event once no earlier one can still commit). A \`: ping\` `
        + `comment comes every ${HEARTBEAT_MS / 1000} s. At most ${MAX_STREAMS_PER_ACCOUNT} streams per account on one server: `
        + 'one more is a 400 `resource_limit_exceeded`. Read keys may stream; agent keys may not. `wishpay listen` and '
        + '`wishpay events tail` use this route.',
      tags: ['Events'],
      querystring: EventStreamQuery,
      response: { 200: EventStreamResponse, ...readErrors() },
    },
  }, async (request, reply) => sendEventStream(request, reply, streams, request.query))

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
