/** Every event type the service emits (contract section 7). */
export const EVENT_TYPES = [
  'wish.created', 'wish.updated', 'wish.deleted',
  'mandate.created', 'mandate.revoked', 'mandate.consumed', 'mandate.expired',
  'payment.created', 'payment.processing', 'payment.succeeded', 'payment.failed', 'payment.refunded',
  'agent.created', 'agent.disabled',
  'trusted_key.created', 'trusted_key.revoked',
] as const

export type EventType = (typeof EVENT_TYPES)[number]
