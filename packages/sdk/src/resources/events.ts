import { ListRequest } from '../pagination.js'
import { fetchInit, type RequestOptions, send } from '../request.js'
import type { Api, Event, ListPage, QueryParams } from '../types.js'

export type EventListParams = QueryParams<'listEvents'>

/** `/events`: every state change, newest first, kept 30 days. */
export class Events {
  constructor(private readonly api: Api) {}

  async retrieve(id: string, options?: RequestOptions): Promise<Event> {
    return (await send(this.api.GET('/events/{id}', { params: { path: { id } }, ...fetchInit(options) }))).data
  }

  list(params: EventListParams = {}, options?: RequestOptions): ListRequest<ListPage<'listEvents'>> {
    return new ListRequest((query) => send(this.api.GET('/events', { params: { query }, ...fetchInit(options) })), params)
  }
}
