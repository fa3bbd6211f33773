import { type Compilable, type Selectable, type SelectQueryBuilder, sql } from 'kysely'
import type { Position, Window } from '../lib/paging.js'
import type { Executor } from './database.js'
import { dialectOf } from './dialect.js'
import { fromTemplate, shapeOf } from './query-template.js'
import { readQuery } from './reusable-query.js'

/**
 * A list query restricted to one page's window (lib/paging.ts): newest first (`created_at` desc, then
 * `id` desc, the order of every list), `take` rows after `skip`. A cursor is a seek, not an offset:
 * `(created_at, id) < (c, i)` (after) or `> (c, i)` (before, read oldest first), a row-value comparison
 * that SQLite and PostgreSQL both turn into a range of the list's index `(…, created_at desc, id desc)`,
 * so the page starts at the cursor whatever its depth; ties in `created_at` are broken by `id`, as the
 * order is. The query must read one table (no joins), which holds `created_at` and `id`. The window's
 * parts are a template's slots (listRows): `skip` undefined for none, `direction` undefined for no cursor.
 */
function windowed<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, take: unknown, skip: unknown, direction: 'after' | 'before' | undefined, from: Position | undefined): SelectQueryBuilder<DB, TB, O> {
  let result = query
  if (direction !== undefined) result = result.where(seekPredicate(direction, from!))
  const order = direction === 'before' ? 'asc' : 'desc'
  result = result.orderBy(sql.ref('created_at'), order).orderBy(sql.ref('id'), order).limit(take as number)
  return skip === undefined ? result : result.offset(skip as number)
}

function seekPredicate(direction: 'after' | 'before', from: Position) {
  const operator = direction === 'after' ? sql.raw('<') : sql.raw('>')
  return sql<boolean>`(${sql.ref('created_at')}, ${sql.ref('id')}) ${operator} (${from.created_at}, ${from.id})`
}

/**
 * A list's filtered query (no select, no order, no window) as a template: `build` makes it from one slot
 * per value of `values`; `shape` names everything else its text depends on (which filters are present, a
 * status that picks the predicate). listRows and countRows compile it once per shape (query-template.ts)
 * rather than having Kysely build it on every request, which cost a SQLite list page about as much as
 * SQLite's own work (docs/performance.md, fifteenth pass).
 */
export interface ListQuery<DB, TB extends keyof DB> {
  shape: string
  values: readonly unknown[]
  build(slots: readonly string[]): SelectQueryBuilder<DB, TB, object>
}

/** The rows of one page of a list: its window's numbers and cursor are values too, its kind part of the shape. */
export function listRows<DB, TB extends keyof DB>(db: Executor, list: ListQuery<DB, TB>, window: Window): Promise<Array<Selectable<DB[TB]>>> {
  const { take, skip, seek } = window
  const windowValues: unknown[] = [take]
  if (skip > 0) windowValues.push(skip)
  if (seek !== undefined) windowValues.push(seek.from.created_at, seek.from.id)
  const query = fromTemplate(db, shapeOf(['list', list.shape, seek?.direction ?? 'first', skip > 0]), [...list.values, ...windowValues], (slots): Compilable<Selectable<DB[TB]>> => {
    const [takeSlot, ...rest] = slots.slice(list.values.length)
    const skipSlot = skip > 0 ? rest.shift() : undefined
    const from = seek === undefined ? undefined : { created_at: rest[0]!, id: rest[1]! }
    return windowed(list.build(slots.slice(0, list.values.length)).selectAll(), takeSlot, skipSlot, seek?.direction, from) as unknown as Compilable<Selectable<DB[TB]>>
  })
  return readQuery(db, query)
}

/**
 * How many rows the list holds (meta.total where no counter keeps it). On PostgreSQL it counts the rows
 * in the list's order, so that the plan reads the list's own index (`(…filters, created_at desc, id
 * desc)`): unordered, a generic plan made while the table was small chose among the indexes led by
 * account_id as it liked (payments of a mandate counted through the wish index, every payment of the
 * account), and kept it as the table grew (docs/performance.md, twenty-second pass). SQLite picks the
 * filters' index by itself, and would run the ordered form through a co-routine.
 */
export async function countRows<DB, TB extends keyof DB>(db: Executor, list: ListQuery<DB, TB>): Promise<number> {
  const count = sql<number | string>`count(*)`.as('n')
  const query = fromTemplate(db, shapeOf(['count', list.shape]), list.values, (slots): Compilable<{ n: number | string }> => {
    const rows = list.build(slots)
    if (dialectOf(db) !== 'postgres') return rows.select(count) as unknown as Compilable<{ n: number | string }>
    const ordered = rows.select(sql<number>`1`.as('one')).orderBy(sql.ref('created_at'), 'desc').orderBy(sql.ref('id'), 'desc')
    return db.selectFrom(ordered.as('listed') as never).select(count) as unknown as Compilable<{ n: number | string }>
  })
  const [row] = await readQuery(db, query)
  return Number(row!.n)
}

/**
 * A list's query from its filters: each present filter is a value (a parameter), which ones are present is
 * part of the shape beside `name`, and `build` gets the filters back with the template's slots in place
 * of their values. For filters that only ever become parameters; one that changes the query's text (a
 * status that picks a predicate) belongs in `name`.
 */
export function filteredList<F extends { [K in keyof F]: string | undefined }, DB, TB extends keyof DB>(
  name: string, filters: F, build: (filters: F) => SelectQueryBuilder<DB, TB, object>): ListQuery<DB, TB> {
  const all = filters as Record<string, string | undefined>
  const present = Object.keys(all).filter((key) => all[key] !== undefined)
  return {
    shape: shapeOf([name, ...present]),
    values: present.map((key) => all[key]!),
    build: (slots) => build(Object.fromEntries(Object.keys(all).map((key) => [key, all[key] === undefined ? undefined : slots[present.indexOf(key)]])) as F),
  }
}
