import type { Client } from 'openapi-fetch'
import type { components, operations, paths } from './generated/schema.js'

/** Every type here comes from the generated schema: nothing is copied by hand. */

export type { components, operations, paths }
export type Api = Client<paths>
type Schemas = components['schemas']

type JsonContent<T> = T extends { content: { 'application/json': infer Body } } ? Body : never
/** The JSON body an operation takes, by operationId. */
export type RequestBody<Op extends keyof operations> = JsonContent<NonNullable<operations[Op]['requestBody']>>
/** The query parameters an operation takes, by operationId. */
export type QueryParams<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>
/** The 200 body of a list operation: `{ data: [...], meta }`. */
export type ListPage<Op extends keyof operations> = operations[Op]['responses'] extends { 200: infer Ok } ? JsonContent<Ok> : never

export type Wish = Schemas['Wish']
export type Mandate = Schemas['Mandate']
export type Payment = Schemas['Payment']
export type Refund = Schemas['Refund']
export type Event = Schemas['Event']
export type EventType = Event['type']
export type WebhookEndpoint = Schemas['WebhookEndpoint']
/** A new endpoint: with its `secret`, shown only in the answer to its creation. */
export type CreatedWebhookEndpoint = Schemas['CreatedWebhookEndpoint']
export type WebhookDeliveryAttempt = Schemas['WebhookDeliveryAttempt']
export type WebhookDeliveryResend = Schemas['WebhookDeliveryResend']
export type Agent = Schemas['Agent']
/** A new agent key: with its secret `key` (`ak_…`), shown only in this answer. */
export type AgentKey = JsonContent<operations['createAgentKey']['responses'][201]>['data']
export type TrustedKey = Schemas['TrustedKey']
