/** The API's objects, as far as the dashboard shows them (the full shapes: GET /openapi.json). */

export interface Wish {
  id: string
  status: string
  query: string
  budget: { max: number, currency: string } | null
  protocol: string
  category: string | null
  metadata: Record<string, string>
  expires_at: string | null
  created_at: string
  updated_at: string
}

export interface Mandate {
  id: string
  protocol: string
  status: string
  wish_id: string | null
  agent_id: string | null
  currency: string
  max_amount: number
  budget_amount: number
  amount_used: number
  usage: string
  uses_count: number
  expires_at: string
  created_at: string
  revoked_at: string | null
}

export interface Payment {
  id: string
  mandate_id: string
  wish_id: string | null
  amount: number
  currency: string
  status: string
  protocol_type: string
  payment_method: string
  amount_refunded: number
  failure_code: string | null
  failure_message: string | null
  created_at: string
  updated_at: string
}

export interface Refund {
  id: string
  payment_id: string
  amount: number
  reason: string | null
  status: string
  created_at: string
}

export interface WishpayEvent {
  id: string
  type: string
  created_at: string
  data: { object: { id?: string } & Record<string, unknown> }
  request_id: string | null
}

export interface WebhookEndpoint {
  id: string
  url: string
  events: string[]
  description: string | null
  enabled: boolean
  disabled_reason: string | null
  created_at: string
}

export interface DeliveryAttempt {
  id: string
  event_id: string
  event_type: string
  attempt: number
  status_code: number | null
  error: string | null
  succeeded: boolean
  duration_ms: number
  next_retry_at: string | null
  created_at: string
}

export const WISH_STATUSES = ['active', 'pending', 'fulfilled', 'cancelled', 'expired']
export const MANDATE_STATUSES = ['active', 'revoked', 'expired', 'consumed']
export const PAYMENT_STATUSES = ['pending', 'processing', 'succeeded', 'failed', 'refunded']
export const EVENT_TYPES = [
  'wish.created', 'wish.updated', 'wish.deleted',
  'mandate.created', 'mandate.revoked', 'mandate.consumed', 'mandate.expired',
  'payment.created', 'payment.processing', 'payment.succeeded', 'payment.failed', 'payment.refunded',
  'agent.created', 'agent.disabled',
  'trusted_key.created', 'trusted_key.revoked',
]
