import { Type, type Static } from '@sinclair/typebox'
import { IdempotencyKeyField, IdParams, ListMeta, Nullable, PageQuery, StringEnum, Timestamp } from '../../http/schemas.js'
import { EVENT_TYPES } from '../events/types.js'

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) URL; private, loopback and link-local targets are refused', examples: ['https://example.org/hooks/wishpay'] })
const EventTypes = Type.Array(StringEnum([...EVENT_TYPES, '*'] as const), {
  minItems: 1,
  maxItems: EVENT_TYPES.length + 1,
  uniqueItems: true,
  description: 'Event types to receive, or ["*"] for all',
  examples: [['payment.succeeded', 'payment.failed']],
})
const Description = Type.String({ maxLength: 500, description: 'Your note about this endpoint' })

const endpointProperties = {
  id: Type.String({ examples: ['we_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  enabled: Type.Boolean({ description: 'false after a 410 Gone, or when you disable it' }),
  disabled_reason: Nullable(Type.String({ description: 'Why the endpoint was disabled, when it was' })),
  created_at: Timestamp,
  updated_at: Timestamp,
}
const example = {
  id: 'we_01jf3v7k8m2n4p6q8r0s2t4v6w',
  url: 'https://example.org/hooks/wishpay',
  events: ['payment.succeeded', 'payment.failed'],
  description: null,
  enabled: true,
  disabled_reason: null,
  created_at: '2026-11-22T10:00:00.000Z',
  updated_at: '2026-11-22T10:00:00.000Z',
}

export const WebhookEndpointSchema = Type.Object(endpointProperties, { $id: 'WebhookEndpoint', title: 'WebhookEndpoint', examples: [example] })
export type WebhookEndpoint = Static<typeof WebhookEndpointSchema>
export const WebhookEndpointRef = Type.Ref(WebhookEndpointSchema.$id!)

export const CreatedWebhookEndpointSchema = Type.Object({
  ...endpointProperties,
  secret: Type.String({ description: 'whsec_…: verifies signatures. Shown only in this response.' }),
}, {
  $id: 'CreatedWebhookEndpoint',
  title: 'CreatedWebhookEndpoint',
  examples: [{ ...example, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
})
export type CreatedWebhookEndpoint = Static<typeof CreatedWebhookEndpointSchema>

export const CreateWebhookEndpointBody = Type.Object({
  url: Url,
  events: EventTypes,
  description: Type.Optional(Nullable(Description)),
  idempotency_key: IdempotencyKeyField,
}, { additionalProperties: false, examples: [{ url: 'https://example.org/hooks/wishpay', events: ['payment.succeeded', 'payment.failed'] }] })
export type CreateWebhookEndpointInput = Static<typeof CreateWebhookEndpointBody>

export const UpdateWebhookEndpointBody = Type.Object({
  url: Type.Optional(Url),
  events: Type.Optional(EventTypes),
  enabled: Type.Optional(Type.Boolean({ description: 'true re-enables an endpoint that was disabled' })),
  description: Type.Optional(Nullable(Description)),
}, { additionalProperties: false, examples: [{ enabled: true, events: ['*'] }] })
export type UpdateWebhookEndpointInput = Static<typeof UpdateWebhookEndpointBody>

export const WebhookEndpointParams = IdParams
export const ListWebhookEndpointsQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export const WebhookEndpointList = Type.Object({ data: Type.Array(WebhookEndpointRef), meta: ListMeta }, { description: 'A page of webhook endpoints' })

export const DeliveryAttemptSchema = Type.Object({
  id: Type.String({ examples: ['wha_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  event_id: Type.String(),
  event_type: Type.String(),
  attempt: Type.Integer({ description: '1 for the first try of this event, then 2, 3, …' }),
  status_code: Nullable(Type.Integer({ description: 'The receiver\'s HTTP status; null when none came (timeout, refused)' })),
  error: Nullable(Type.String()),
  succeeded: Type.Boolean({ description: 'The receiver answered 2xx' }),
  duration_ms: Type.Integer(),
  next_retry_at: Nullable(Timestamp),
  created_at: Timestamp,
}, {
  $id: 'WebhookDeliveryAttempt',
  title: 'WebhookDeliveryAttempt',
  examples: [{
    id: 'wha_01jf3v7k8m2n4p6q8r0s2t4v6w',
    event_id: 'evt_01jf3v7k8m2n4p6q8r0s2t4v6w',
    event_type: 'payment.succeeded',
    attempt: 1,
    status_code: 503,
    error: null,
    succeeded: false,
    duration_ms: 42,
    next_retry_at: '2026-11-22T10:00:05.000Z',
    created_at: '2026-11-22T10:00:00.000Z',
  }],
})
export type DeliveryAttempt = Static<typeof DeliveryAttemptSchema>
export const DeliveryAttemptList = Type.Object({ data: Type.Array(Type.Ref(DeliveryAttemptSchema.$id!)), meta: ListMeta }, { description: 'Delivery attempts, newest first' })

export const ResendDeliveryBody = Type.Object({ idempotency_key: IdempotencyKeyField }, {
  additionalProperties: false,
  examples: [{ idempotency_key: 'example-resend-5c1e9a04' }],
})
export const ResendDeliveryParams = IdParams

export const DeliveryResendSchema = Type.Object({
  resent: Type.String({ description: 'The delivery attempt (wha_…) whose event is sent again' }),
  endpoint_id: Type.String(),
  event_id: Type.String(),
  event_type: Type.String(),
  scheduled_at: Timestamp,
}, {
  $id: 'WebhookDeliveryResend',
  title: 'WebhookDeliveryResend',
  description: 'A new delivery of the event to the endpoint, scheduled now; its attempt appears in the endpoint\'s deliveries',
  examples: [{
    resent: 'wha_01jf3v7k8m2n4p6q8r0s2t4v6w',
    endpoint_id: 'we_01jf3v7k8m2n4p6q8r0s2t4v6w',
    event_id: 'evt_01jf3v7k8m2n4p6q8r0s2t4v6w',
    event_type: 'payment.succeeded',
    scheduled_at: '2026-11-22T10:05:00.000Z',
  }],
})
export type DeliveryResend = Static<typeof DeliveryResendSchema>
