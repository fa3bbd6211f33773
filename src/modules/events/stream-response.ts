import { PassThrough } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { EventStreams } from './stream.js'
import type { Event, EventStreamInput } from './schemas.js'

/** A comment line this often keeps proxies and load balancers from closing a quiet stream. */
export const HEARTBEAT_MS = 15_000
/** What an EventSource waits before reconnecting, sent as the stream's first `retry:`. */
const RECONNECT_MS = 3000

/** One server-sent event: its id and type, and the event exactly as GET /events/:id and webhooks carry it. */
function frame(event: Event): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`
}

/** Resolves once the client has read what was written, or is gone. */
function drained(body: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      body.off('drain', done)
      body.off('close', done)
      resolve()
    }
    body.on('drain', done)
    body.on('close', done)
  })
}

/**
 * Answers GET /events/stream: opens the stream (every refusal is thrown before the answer starts),
 * then writes the events as they come until the client or the server closes it.
 */
export async function sendEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  streams: EventStreams,
  query: EventStreamInput,
): Promise<FastifyReply> {
  const lastEventId = request.headers['last-event-id']
  const stream = await streams.open(request.ctx, {
    lastEventId: Array.isArray(lastEventId) ? lastEventId.join(',') : lastEventId,
    startingAfter: query.starting_after,
    types: query.types,
  })
  const body = new PassThrough()
  // A write racing the client's disconnection fails; the close below already ends everything.
  body.on('error', () => {})
  const heartbeat = setInterval(() => body.write(': ping\n\n'), HEARTBEAT_MS)
  const finish = () => {
    clearInterval(heartbeat)
    stream.close()
  }
  // The client went away (or the server closed the stream): stop polling and free the slot.
  body.once('close', finish)
  void (async () => {
    body.write(`retry: ${RECONNECT_MS}\nid: ${stream.start}\n\n`)
    try {
      for await (const events of stream.batches()) {
        if (body.destroyed) break
        if (!body.write(events.map(frame).join(''))) await drained(body)
      }
    } catch (error) {
      // A poll failed (the database went away): the client resumes from its last id on reconnection.
      request.log.warn({ err: error }, 'event stream ended by a failed poll')
    } finally {
      finish()
      body.end()
    }
  })()
  return reply
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache')
    // Ends the connection with the stream, so that a closing server is not kept waiting by it.
    .header('connection', 'close')
    .header('x-accel-buffering', 'no')
    // The schema describes the text; the payload is the stream that writes it.
    .send(body as unknown as string)
}
