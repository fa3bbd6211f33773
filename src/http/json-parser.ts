import type { FastifyInstance } from 'fastify'
import secureJson from 'secure-json-parse'
import { errors } from '../lib/errors.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The JSON body's text as received; null when the request had none. A retry sends the same text again,
     * which spares its idempotency check the fingerprint (http/retry-matches.ts).
     */
    bodyText: string | null
  }
}

/**
 * The JSON body parser. Unlike Fastify's default it treats an empty body as no body, since many
 * clients send `Content-Type: application/json` on a DELETE; and it tells malformed JSON apart from
 * prototype-poisoning keys, which are refused outright and never reach a handler.
 */
export function registerJsonParser(app: FastifyInstance): void {
  app.decorateRequest('bodyText', null)
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string
    request.bodyText = text
    if (text.trim() === '') return done(null, undefined)
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }))
    } catch (error) {
      const poisoned = /prototype/.test((error as Error).message)
      done(poisoned
        ? errors.invalidJson('Request body holds a forbidden __proto__ or constructor.prototype key')
        : errors.invalidJson(`Request body is not valid JSON: ${(error as Error).message}`), undefined)
    }
  })
}
