import { ListRequest } from '../pagination.js'
import { fetchInit, idempotencyHeader, type RequestOptions, send } from '../request.js'
import type { Agent, AgentKey, Api, ListPage, QueryParams, RequestBody } from '../types.js'

export type AgentCreateParams = RequestBody<'createAgent'>
export type AgentListParams = QueryParams<'listAgents'>

/** `/agents`: AI agents that pay with keys of their own (`ak_`), within the mandates granted to them. */
export class Agents {
  constructor(private readonly api: Api) {}

  async create(params: AgentCreateParams, options?: RequestOptions): Promise<Agent> {
    const header = idempotencyHeader(options, params)
    return (await send(this.api.POST('/agents', { body: params, params: { header }, ...fetchInit(options) }))).data
  }

  async retrieve(id: string, options?: RequestOptions): Promise<Agent> {
    return (await send(this.api.GET('/agents/{id}', { params: { path: { id } }, ...fetchInit(options) }))).data
  }

  list(params: AgentListParams = {}, options?: RequestOptions): ListRequest<ListPage<'listAgents'>> {
    return new ListRequest((query) => send(this.api.GET('/agents', { params: { query }, ...fetchInit(options) })), params)
  }

  /** Disables the agent: its keys stop working. */
  async disable(id: string, options?: RequestOptions): Promise<Agent> {
    const header = idempotencyHeader(options)
    return (await send(this.api.POST('/agents/{id}/disable', { params: { path: { id }, header }, ...fetchInit(options) }))).data
  }

  /** A new `ak_` key for the agent; its secret is in this answer only. */
  async createKey(id: string, options?: RequestOptions): Promise<AgentKey> {
    const header = idempotencyHeader(options)
    return (await send(this.api.POST('/agents/{id}/keys', { params: { path: { id }, header }, ...fetchInit(options) }))).data
  }
}
