import { Webhook } from 'standardwebhooks'
import { WebhookVerificationError } from './errors.js'
import type { Event } from './types.js'

/** Request headers as a fetch `Headers` or as Node's `req.headers`. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>

function lowerCased(headers: WebhookHeaders): Record<string, string> {
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers)
  const out: Record<string, string> = {}
  for (const [name, value] of entries) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value
  }
  return out
}

/**
 * Checks a delivery as Wishpay signs it (Standard Webhooks v1: HMAC-SHA256 over
 * `webhook-id.webhook-timestamp.body`, a timestamp within 5 minutes) with the `standardwebhooks`
 * library, and returns the event. `body` must be the raw body as received, not re-serialised JSON.
 */
export function verify(body: string | Uint8Array, headers: WebhookHeaders, secret: string): Event {
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body)
  try {
    return new Webhook(secret).verify(text, lowerCased(headers)) as Event
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    throw new WebhookVerificationError(`Webhook verification failed: ${reason}`, { cause: error })
  }
}

export const webhooks = { verify }
