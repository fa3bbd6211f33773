/** What a service needs to know about the caller of one operation. */
export interface RequestContext {
  accountId: string
  /** The Request-Id, recorded on events; null for work not started by a request. */
  requestId: string | null
}
