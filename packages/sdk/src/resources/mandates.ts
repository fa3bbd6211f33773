import { ListRequest } from '../pagination.js'
import { fetchInit, idempotencyHeader, type RequestOptions, send } from '../request.js'
import type { Api, ListPage, Mandate, QueryParams, RequestBody } from '../types.js'

export type MandateCreateParams = RequestBody<'createMandate'>
export type MandateListParams = QueryParams<'listMandates'>

/** `/mandates`: a bounded authority to pay (per payment and in all), optionally for a wish. */
export class Mandates {
  constructor(private readonly api: Api) {}

  async create(params: MandateCreateParams, options?: RequestOptions): Promise<Mandate> {
    const header = idempotencyHeader(options, params)
    return (await send(this.api.POST('/mandates', { body: params, params: { header }, ...fetchInit(options) }))).data
  }

  async retrieve(id: string, options?: RequestOptions): Promise<Mandate> {
    return (await send(this.api.GET('/mandates/{id}', { params: { path: { id } }, ...fetchInit(options) }))).data
  }

  list(params: MandateListParams = {}, options?: RequestOptions): ListRequest<ListPage<'listMandates'>> {
    return new ListRequest((query) => send(this.api.GET('/mandates', { params: { query }, ...fetchInit(options) })), params)
  }

  async revoke(id: string, options?: RequestOptions): Promise<Mandate> {
    const header = idempotencyHeader(options)
    return (await send(this.api.POST('/mandates/{id}/revoke', { params: { path: { id }, header }, ...fetchInit(options) }))).data
  }
}
