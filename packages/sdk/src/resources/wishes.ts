import { ListRequest } from '../pagination.js'
import { fetchInit, idempotencyHeader, type RequestOptions, send } from '../request.js'
import type { Api, ListPage, QueryParams, RequestBody, Wish } from '../types.js'

export type WishCreateParams = RequestBody<'createWish'>
export type WishUpdateParams = RequestBody<'updateWish'>
export type WishListParams = QueryParams<'listWishes'>

/** `/wishes`: what a person wants, and the budget for it. */
export class Wishes {
  constructor(private readonly api: Api) {}

  async create(params: WishCreateParams, options?: RequestOptions): Promise<Wish> {
    const header = idempotencyHeader(options, params)
    return (await send(this.api.POST('/wishes', { body: params, params: { header }, ...fetchInit(options) }))).data
  }

  async retrieve(id: string, options?: RequestOptions): Promise<Wish> {
    return (await send(this.api.GET('/wishes/{id}', { params: { path: { id } }, ...fetchInit(options) }))).data
  }

  /** Changes only the members sent; `metadata` is merged (a key set to null is removed). */
  async update(id: string, params: WishUpdateParams, options?: RequestOptions): Promise<Wish> {
    return (await send(this.api.PUT('/wishes/{id}', { params: { path: { id } }, body: params, ...fetchInit(options) }))).data
  }

  list(params: WishListParams = {}, options?: RequestOptions): ListRequest<ListPage<'listWishes'>> {
    return new ListRequest((query) => send(this.api.GET('/wishes', { params: { query }, ...fetchInit(options) })), params)
  }

  async del(id: string, options?: RequestOptions): Promise<void> {
    await send(this.api.DELETE('/wishes/{id}', { params: { path: { id } }, ...fetchInit(options) }))
  }
}
