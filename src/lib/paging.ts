import { errors } from './errors.js'

/**
 * The list rules of contract section 1, and the cursors of issue 16, in one place: what a list request
 * asks for (pageOf), what a repository reads for it (Window, applied by db/paging.ts) and what
 * the answer holds (listPage). Every list is newest first: `created_at` descending, then `id` descending.
 */
export const DEFAULT_PAGE = { limit: 10, offset: 0 } as const
export const MAX_LIMIT = 100
/**
 * The largest offset a list takes: 10^9 fits a 32-bit signed integer, so no driver or dialect
 * (SQLite, PostgreSQL int4 or int8) can overflow on it, and is far past any page a client reads.
 */
export const MAX_OFFSET = 1_000_000_000

export interface Page { limit: number, offset: number }

/** The paging members of every list's query string (http/schemas.ts PageQuery). */
export interface PageInput {
  limit?: number | undefined
  offset?: number | undefined
  starting_after?: string | undefined
  ending_before?: string | undefined
}

/** The page a list request asked for, defaults applied. */
export function pageOf(query: PageInput): Page {
  return { limit: query.limit ?? DEFAULT_PAGE.limit, offset: query.offset ?? DEFAULT_PAGE.offset }
}

/** Where an object sits in every list: its sort key. */
export interface Position { created_at: string, id: string }

/**
 * What a repository reads for one page (db/paging.ts `listRows`): `take` rows after skipping `skip`,
 * newest first; with `seek`, only the rows after (older than) or before (newer than) a position, and
 * for `before` read oldest first, so that the rows nearest the cursor come first.
 */
export interface Window {
  /** The page's limit plus one: the extra row says whether more follow (`has_more`). */
  take: number
  skip: number
  seek?: { direction: 'after' | 'before', from: Position } | undefined
}

export interface ListMeta { total: number, limit: number, offset: number, has_more: boolean }
export interface ListPage<T> { data: T[], meta: ListMeta }

/** What one list is made of; listPage does the rest. */
export interface ListSource<Row extends Position, Item> {
  /** The kind of object, for the error of a cursor that names none: `No such payment: '…'`. */
  resource: string
  /**
   * The object a cursor names, if it is in this list's scope for this caller (the account, the payment
   * of a refund list, the endpoint of a delivery list, an agent key's own objects), whatever the
   * list's filters: a cursor is a position, it need not match them.
   */
  find(id: string): Promise<Position | undefined>
  /** The rows of the window, in the window's order (db/paging.ts listRows). */
  rows(window: Window): Promise<Row[]>
  /** meta.total: every object of the list's filters, whichever page is asked for. */
  total(): Promise<number>
  map(row: Row): Item
}

/**
 * The cursor a request sent, after the rules that need no database: one cursor at most, and no offset
 * with it (a cursor page starts at its cursor). Errors name the parameter at fault.
 */
function cursorOf(input: PageInput): { param: 'starting_after' | 'ending_before', id: string } | undefined {
  const { starting_after: after, ending_before: before } = input
  if (after !== undefined && before !== undefined) {
    throw errors.parameterInvalid('ending_before', 'starting_after and ending_before cannot be sent together: page forwards with starting_after or backwards with ending_before')
  }
  const cursor = after !== undefined ? { param: 'starting_after' as const, id: after } : before !== undefined ? { param: 'ending_before' as const, id: before } : undefined
  if (cursor && (input.offset ?? 0) > 0) {
    throw errors.parameterInvalid('offset', `offset cannot be used with ${cursor.param}: a cursor page starts at its cursor; leave offset out (or 0)`)
  }
  return cursor
}

/**
 * One page of a list, offset or cursor (Stripe's semantics): `starting_after=<id>` answers the objects
 * that follow that object in list order (older ones), `ending_before=<id>` the ones just before it
 * (newer ones), still newest first. `meta.has_more` says whether more objects follow in the direction
 * of travel: after the page's last object for offsets and `starting_after`, before its first for
 * `ending_before`. `meta.total` counts every match of the filter, `limit` and `offset` echo what was
 * applied (offset is 0 with a cursor). A cursor that names no object of the list's scope, another
 * account's included, is a 400 `resource_missing` naming the parameter.
 *
 * The rows are read by seeking the list's index to the cursor's position (db/paging.ts), so a page deep
 * in a long list costs what the first page costs; meta.total is counted beside it (docs/performance.md).
 */
export async function listPage<Row extends Position, Item>(input: PageInput, source: ListSource<Row, Item>): Promise<ListPage<Item>> {
  const page = pageOf(input)
  const cursor = cursorOf(input)
  const read = async () => {
    if (cursor === undefined) return source.rows({ take: page.limit + 1, skip: page.offset })
    const found = await source.find(cursor.id)
    if (!found) throw errors.cursorMissing(source.resource, cursor.id, cursor.param)
    const from = { created_at: found.created_at, id: found.id }
    return source.rows({ take: page.limit + 1, skip: 0, seek: { direction: cursor.param === 'starting_after' ? 'after' : 'before', from } })
  }
  const [rows, total] = await Promise.all([read(), source.total()])
  const kept = rows.slice(0, page.limit)
  if (cursor?.param === 'ending_before') kept.reverse()
  return { data: kept.map((row) => source.map(row)), meta: { total, limit: page.limit, offset: page.offset, has_more: rows.length > page.limit } }
}
