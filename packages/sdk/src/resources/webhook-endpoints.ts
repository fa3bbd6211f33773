import { ListRequest } from '../pagination.js'
import { fetchInit, idempotencyHeader, type RequestOptions, send } from '../request.js'
import type { Api, CreatedWebhookEndpoint, ListPage, QueryParams, RequestBody, WebhookEndpoint } from '../types.js'

export type WebhookEndpointCreateParams = RequestBody<'createWebhookEndpoint'>
export type WebhookEndpointUpdateParams = RequestBody<'updateWebhookEndpoint'>
export type WebhookEndpointListParams = QueryParams<'listWebhookEndpoints'>
export type WebhookDeliveryListParams = QueryParams<'listWebhookDeliveries'>

/** `/webhook_endpoints` and their delivery attempts. */
export class WebhookEndpoints {
  constructor(private readonly api: Api) {}

  /** The answer carries the endpoint's signing `secret`, which no other answer shows. */
  async create(params: WebhookEndpointCreateParams, options?: RequestOptions): Promise<CreatedWebhookEndpoint> {
    const header = idempotencyHeader(options, params)
    return (await send(this.api.POST('/webhook_endpoints', { body: params, params: { header }, ...fetchInit(options) }))).data
  }

  async retrieve(id: string, options?: RequestOptions): Promise<WebhookEndpoint> {
    return (await send(this.api.GET('/webhook_endpoints/{id}', { params: { path: { id } }, ...fetchInit(options) }))).data
  }

  async update(id: string, params: WebhookEndpointUpdateParams, options?: RequestOptions): Promise<WebhookEndpoint> {
    return (await send(this.api.PUT('/webhook_endpoints/{id}', { params: { path: { id } }, body: params, ...fetchInit(options) }))).data
  }

  list(params: WebhookEndpointListParams = {}, options?: RequestOptions): ListRequest<ListPage<'listWebhookEndpoints'>> {
    return new ListRequest((query) => send(this.api.GET('/webhook_endpoints', { params: { query }, ...fetchInit(options) })), params)
  }

  async del(id: string, options?: RequestOptions): Promise<void> {
    await send(this.api.DELETE('/webhook_endpoints/{id}', { params: { path: { id } }, ...fetchInit(options) }))
  }

  /** The endpoint's delivery attempts, newest first. */
  listDeliveries(id: string, params: WebhookDeliveryListParams = {}, options?: RequestOptions): ListRequest<ListPage<'listWebhookDeliveries'>> {
    return new ListRequest((query) => send(this.api.GET('/webhook_endpoints/{id}/deliveries', { params: { path: { id }, query }, ...fetchInit(options) })), params)
  }
}
