export { Wishpay, type WishpayOptions } from './client.js'
export {
  ApiError,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  IdempotencyError,
  InvalidRequestError,
  type ParameterError,
  PaymentError,
  PermissionError,
  RateLimitError,
  WebhookVerificationError,
  WishpayError,
} from './errors.js'
export { ListRequest, type PageLike } from './pagination.js'
export type { RequestOptions } from './request.js'
export type * from './types.js'
export type { AgentCreateParams, AgentListParams } from './resources/agents.js'
export type { EventListParams } from './resources/events.js'
export type { MandateCreateParams, MandateListParams } from './resources/mandates.js'
export type { PaymentCreateParams, PaymentListParams, RefundCreateParams, RefundListParams } from './resources/payments.js'
export type { TrustedKeyCreateParams, TrustedKeyListParams } from './resources/trusted-keys.js'
export type {
  WebhookDeliveryListParams,
  WebhookEndpointCreateParams,
  WebhookEndpointListParams,
  WebhookEndpointUpdateParams,
} from './resources/webhook-endpoints.js'
export type { WishCreateParams, WishListParams, WishUpdateParams } from './resources/wishes.js'
export { type WebhookHeaders, webhooks } from './webhooks.js'
