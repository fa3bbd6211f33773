import { ListRequest } from '../pagination.js'
import { fetchInit, idempotencyHeader, type RequestOptions, send } from '../request.js'
import type { Api, ListPage, QueryParams, RequestBody, TrustedKey } from '../types.js'

export type TrustedKeyCreateParams = RequestBody<'createTrustedKey'>
export type TrustedKeyListParams = QueryParams<'listTrustedKeys'>

/** `/trusted_keys`: public keys whose AP2 mandates the account accepts. */
export class TrustedKeys {
  constructor(private readonly api: Api) {}

  async create(params: TrustedKeyCreateParams, options?: RequestOptions): Promise<TrustedKey> {
    const header = idempotencyHeader(options, params)
    return (await send(this.api.POST('/trusted_keys', { body: params, params: { header }, ...fetchInit(options) }))).data
  }

  async retrieve(id: string, options?: RequestOptions): Promise<TrustedKey> {
    return (await send(this.api.GET('/trusted_keys/{id}', { params: { path: { id } }, ...fetchInit(options) }))).data
  }

  list(params: TrustedKeyListParams = {}, options?: RequestOptions): ListRequest<ListPage<'listTrustedKeys'>> {
    return new ListRequest((query) => send(this.api.GET('/trusted_keys', { params: { query }, ...fetchInit(options) })), params)
  }

  async revoke(id: string, options?: RequestOptions): Promise<TrustedKey> {
    const header = idempotencyHeader(options)
    return (await send(this.api.POST('/trusted_keys/{id}/revoke', { params: { path: { id }, header }, ...fetchInit(options) }))).data
  }
}
