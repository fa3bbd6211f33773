import http from 'node:http'
import https from 'node:https'
import { Webhook } from 'standardwebhooks'
import { guardedLookup, literalHostRefused } from './address-policy.js'
import { parseRetryAfter } from './retry-schedule.js'

export const DELIVERY_TIMEOUT_MS = 10_000

export interface SendResult {
  statusCode: number | null
  error: string | null
  retryAfterSeconds: number | null
  durationMs: number
}

export interface SendRequest {
  url: string
  secret: string
  eventId: string
  body: string
  now: Date
  allowPrivate: boolean
  timeoutMs?: number
}

/**
 * One delivery attempt, signed per Standard Webhooks v1: webhook-id (the event id), webhook-timestamp
 * and webhook-signature (v1,<base64 HMAC-SHA256 of id.timestamp.body>). Redirects are not followed;
 * the whole attempt is bounded by the timeout; only the status line is read.
 */
export function send(request: SendRequest): Promise<SendResult> {
  // A duration from the monotonic clock; the time of the answer is the request's `now` plus it.
  const started = performance.now()
  const elapsedMs = () => performance.now() - started
  const done = (result: Omit<SendResult, 'durationMs'>): SendResult => ({ ...result, durationMs: Math.round(elapsedMs()) })
  if (literalHostRefused(request.url, request.allowPrivate)) {
    return Promise.resolve(done({ statusCode: null, error: 'url points to a non-public address', retryAfterSeconds: null }))
  }
  const signature = new Webhook(request.secret).sign(request.eventId, request.now, request.body)
  const url = new URL(request.url)
  const client = url.protocol === 'https:' ? https : http
  return new Promise((resolve) => {
    const req = client.request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Wishpay-Webhooks/1',
        'webhook-id': request.eventId,
        'webhook-timestamp': String(Math.floor(request.now.getTime() / 1000)),
        'webhook-signature': signature,
      },
      lookup: guardedLookup(request.allowPrivate),
      signal: AbortSignal.timeout(request.timeoutMs ?? DELIVERY_TIMEOUT_MS),
    }, (res) => {
      res.resume()
      const header = res.headers['retry-after']
      resolve(done({
        statusCode: res.statusCode ?? null,
        error: null,
        retryAfterSeconds: parseRetryAfter(Array.isArray(header) ? header[0] : header, new Date(request.now.getTime() + elapsedMs())),
      }))
    })
    req.on('error', (error: NodeJS.ErrnoException) => {
      const reason = error.name === 'TimeoutError' || error.name === 'AbortError' ? 'timed out' : error.message
      resolve(done({ statusCode: null, error: reason.slice(0, 500), retryAfterSeconds: null }))
    })
    req.end(request.body)
  })
}
