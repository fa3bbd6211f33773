import { ListRequest } from '../pagination.js'
import { fetchInit, idempotencyHeader, type RequestOptions, send } from '../request.js'
import type { Api, ListPage, Payment, QueryParams, Refund, RequestBody } from '../types.js'

export type PaymentCreateParams = RequestBody<'createPayment'>
export type PaymentListParams = QueryParams<'listPayments'>
export type RefundCreateParams = RequestBody<'createRefund'>
export type RefundListParams = QueryParams<'listRefunds'>

/**
 * `/payments` and their refunds. Both writes are payment operations: they always carry an
 * idempotency key (yours, or one the SDK makes), so a retried call never charges or refunds twice.
 */
export class Payments {
  constructor(private readonly api: Api) {}

  async create(params: PaymentCreateParams, options?: RequestOptions): Promise<Payment> {
    const header = idempotencyHeader(options, params)
    return (await send(this.api.POST('/payments', { body: params, params: { header }, ...fetchInit(options) }))).data
  }

  async retrieve(id: string, options?: RequestOptions): Promise<Payment> {
    return (await send(this.api.GET('/payments/{id}', { params: { path: { id } }, ...fetchInit(options) }))).data
  }

  list(params: PaymentListParams = {}, options?: RequestOptions): ListRequest<ListPage<'listPayments'>> {
    return new ListRequest((query) => send(this.api.GET('/payments', { params: { query }, ...fetchInit(options) })), params)
  }

  /** Sandbox only: settles a `pending` or `processing` payment now instead of after the settlement delay. */
  async settle(id: string, options?: RequestOptions): Promise<Payment> {
    const header = idempotencyHeader(options)
    return (await send(this.api.POST('/payments/{id}/settle', { params: { path: { id }, header }, ...fetchInit(options) }))).data
  }

  /** Refunds `amount` (default: all that remains) of a succeeded payment. */
  async refund(id: string, params: RefundCreateParams = {}, options?: RequestOptions): Promise<Refund> {
    const header = idempotencyHeader(options, params)
    return (await send(this.api.POST('/payments/{id}/refunds', { params: { path: { id }, header }, body: params, ...fetchInit(options) }))).data
  }

  listRefunds(id: string, params: RefundListParams = {}, options?: RequestOptions): ListRequest<ListPage<'listRefunds'>> {
    return new ListRequest((query) => send(this.api.GET('/payments/{id}/refunds', { params: { path: { id }, query }, ...fetchInit(options) })), params)
  }
}
