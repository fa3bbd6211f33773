/** The list rules of contract section 1: what services need of a page, without the HTTP schema. */
export const DEFAULT_PAGE = { limit: 10, offset: 0 } as const
export const MAX_LIMIT = 100
/**
 * The largest offset a list takes: 10^9 fits a 32-bit signed integer, so no driver or dialect
 * (SQLite, PostgreSQL int4 or int8) can overflow on it, and is far past any page a client reads.
 */
export const MAX_OFFSET = 1_000_000_000

export interface Page { limit: number, offset: number }

/** The page a list request asked for, defaults applied. */
export function pageOf(query: { limit?: number | undefined, offset?: number | undefined }): Page {
  return { limit: query.limit ?? DEFAULT_PAGE.limit, offset: query.offset ?? DEFAULT_PAGE.offset }
}
