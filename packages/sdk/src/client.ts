import createClient from 'openapi-fetch'
import { Agents } from './resources/agents.js'
import { Events } from './resources/events.js'
import { Mandates } from './resources/mandates.js'
import { Payments } from './resources/payments.js'
import { TrustedKeys } from './resources/trusted-keys.js'
import { WebhookDeliveries } from './resources/webhook-deliveries.js'
import { WebhookEndpoints } from './resources/webhook-endpoints.js'
import { Wishes } from './resources/wishes.js'
import { DEFAULT_RETRY_POLICY, type Fetch, retryingFetch } from './retry.js'
import type { paths } from './types.js'
import { webhooks } from './webhooks.js'

export interface WishpayOptions {
  /** A secret (`sk_`), read-only (`rk_`) or agent (`ak_`) key. */
  apiKey: string
  /** Where the Wishpay server listens, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string
  /** Retries of a failed call that is safe to repeat (default 2; 0 turns retries off). */
  maxRetries?: number
  /** Bound on each attempt, in milliseconds (default 30 000). */
  timeoutMs?: number
  /** The fetch to send requests with (default: the global fetch). */
  fetch?: Fetch
}

/**
 * The Wishpay API client.
 *
 * ```ts
 * const wishpay = new Wishpay({ apiKey: 'sk_…', baseUrl: 'http://127.0.0.1:3000' })
 * const wish = await wishpay.wishes.create({ query: 'Headphones', budget: { max: 199.99 } })
 * ```
 */
export class Wishpay {
  readonly wishes: Wishes
  readonly mandates: Mandates
  readonly payments: Payments
  readonly events: Events
  readonly webhookEndpoints: WebhookEndpoints
  readonly webhookDeliveries: WebhookDeliveries
  readonly agents: Agents
  readonly trustedKeys: TrustedKeys
  /** `webhooks.verify(body, headers, secret)`: needs no key, so it is also exported on its own. */
  readonly webhooks = webhooks

  constructor(options: WishpayOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey === '') throw new TypeError('Wishpay: apiKey is required')
    if (typeof options.baseUrl !== 'string' || options.baseUrl === '') throw new TypeError('Wishpay: baseUrl is required')
    const policy = {
      ...DEFAULT_RETRY_POLICY,
      maxRetries: options.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries,
      timeoutMs: options.timeoutMs ?? DEFAULT_RETRY_POLICY.timeoutMs,
    }
    const fetch = options.fetch ?? ((request: Request) => globalThis.fetch(request))
    const api = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      fetch: retryingFetch(fetch, policy),
      headers: { Authorization: `Bearer ${options.apiKey}` },
    })
    this.wishes = new Wishes(api)
    this.mandates = new Mandates(api)
    this.payments = new Payments(api)
    this.events = new Events(api)
    this.webhookEndpoints = new WebhookEndpoints(api)
    this.webhookDeliveries = new WebhookDeliveries(api)
    this.agents = new Agents(api)
    this.trustedKeys = new TrustedKeys(api)
  }
}
