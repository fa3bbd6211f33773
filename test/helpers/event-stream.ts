import type { InjectOptions, LightMyRequestResponse } from 'fastify'

/** GET /events/stream: a stream that stays open until the client or the server ends it. */
export function isEventStream(url: InjectOptions['url']): boolean {
  const path = typeof url === 'string' ? url : url?.pathname ?? ''
  return path.split('?')[0] === '/events/stream'
}

/**
 * app.inject for GET /events/stream, which would otherwise wait forever for the end of the stream: a 200
 * resolves with its status, headers and first chunk (the stream's first message), and the stream is then
 * dropped; any other answer is read whole. The shape is what app.inject resolves with.
 */
export async function injectEventStream(inject: (options: InjectOptions) => Promise<LightMyRequestResponse>, options: InjectOptions) {
  const res = await inject({ ...options, payloadAsStream: true })
  let payload = ''
  for await (const chunk of res.stream()) {
    payload += String(chunk)
    if (res.statusCode === 200) break
  }
  return { statusCode: res.statusCode, headers: res.headers, payload }
}
