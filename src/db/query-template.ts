import { type Compilable, type CompiledQuery, type Insertable, PostgresAdapter, type QueryExecutorProvider, type RawBuilder } from 'kysely'
import { nameStatement } from './prepared-statements.js'
import type { DatabaseSchema } from './schema.js'
import type { Executor } from './database.js'

/** Stands for the i-th value while a template is compiled; no real value looks like it. */
const slot = (i: number) => `\u0000query-template-value-${i}\u0000`

interface Template {
  query: CompiledQuery<unknown>
  /** For each parameter: the value it takes, or -1 for a constant of the query itself. */
  valueOf: number[]
}

/** Shapes are few (a query's optional parts, an insert's columns); the bound only guards against a bug. */
const MAX_SHAPES = 1000
// Keyed by the dialect's adapter, which a Kysely instance shares with its transactions.
const templatesByAdapter = new WeakMap<object, Map<string, Template>>()

/**
 * A query compiled once per dialect and `shape`, then given new values: building and compiling a Kysely
 * query costs more than SQLite takes to run it, so the statements every payment runs are compiled once.
 * `build` gets one slot per value, to put where the value goes; each slot must become a parameter (it
 * throws otherwise), so a value can never be spliced into the SQL text. `shape` names everything else
 * the query's text depends on: two calls with one shape must build the same query. On PostgreSQL the
 * template's text gets a name, so each connection prepares it once (prepared-statements.ts).
 */
export function fromTemplate<R>(db: Executor, shape: string, values: readonly unknown[], build: (slots: readonly string[]) => Compilable<R>): CompiledQuery<R> {
  const adapter = db.getExecutor().adapter
  let templates = templatesByAdapter.get(adapter)
  if (templates === undefined) templatesByAdapter.set(adapter, templates = new Map())
  let template = templates.get(shape)
  if (template === undefined) {
    const slots = values.map((_, i) => slot(i))
    const query = build(slots).compile()
    const valueOf = query.parameters.map((p) => slots.indexOf(p as string))
    if (slots.some((_, i) => !valueOf.includes(i))) throw new Error(`fromTemplate: a value is not a parameter of ${query.sql}`)
    if (templates.size >= MAX_SHAPES) templates.clear()
    if (adapter instanceof PostgresAdapter) nameStatement(query.sql)
    templates.set(shape, template = { query, valueOf })
  }
  const { query, valueOf } = template
  return { ...query, parameters: valueOf.map((v, i) => (v === -1 ? query.parameters[i] : values[v])) } as CompiledQuery<R>
}

/** A raw SQL statement as a template's `build` result. */
export function compilable<R>(provider: QueryExecutorProvider, statement: RawBuilder<R>): Compilable<R> {
  return { compile: () => statement.compile(provider) }
}

/** A statement compiled for the database it runs on. */
export type Statement = CompiledQuery<unknown>

/** A statement as a CompiledQuery, whichever of the two insertRows (or a builder) gave. */
export function compiled<R>(statement: Compilable<R> | CompiledQuery<R>): CompiledQuery<R> {
  return 'compile' in statement ? statement.compile() : statement
}

type Table = keyof DatabaseSchema & string

/** A row's columns that have a value, in order: Kysely's `values()` leaves an undefined one out. */
function definedColumns(row: Record<string, unknown>): string[] {
  const columns: string[] = []
  for (const column of Object.keys(row)) if (row[column] !== undefined) columns.push(column)
  return columns
}

/** Whether a row's columns that have a value are exactly `columns`, in that order. */
function hasColumns(row: Record<string, unknown>, columns: readonly string[]): boolean {
  let i = 0
  for (const column of Object.keys(row)) {
    if (row[column] === undefined) continue
    if (columns[i++] !== column) return false
  }
  return i === columns.length
}

/**
 * `insert into <table> (<columns>) values ...` for rows that name the same columns (as Kysely's
 * `values()` does, a column whose value is undefined is left out), from a template per table, column list
 * and row count. Rows that name different columns are built by Kysely as usual. Every payment runs it
 * three to five times, so it lists the first row's columns once, checks each other row against that list
 * in place and joins the list once (docs/performance.md, eighth pass).
 */
export function insertRows<T extends Table>(db: Executor, table: T, rows: readonly Insertable<DatabaseSchema[T]>[]): Compilable<unknown> | CompiledQuery<unknown> {
  const records = rows as readonly Record<string, unknown>[]
  const columns = records.length === 0 ? [] : definedColumns(records[0]!)
  if (columns.length === 0 || !records.every((row, r) => r === 0 || hasColumns(row, columns))) {
    return db.insertInto(table).values(rows as Insertable<DatabaseSchema[T]>[])
  }
  const width = columns.length
  const values: unknown[] = new Array(records.length * width)
  for (let r = 0; r < records.length; r++) {
    const row = records[r]!
    for (let i = 0; i < width; i++) values[r * width + i] = row[columns[i]!]
  }
  return fromTemplate(db, `insert ${table} ${records.length} ${columns.join()}`, values, (slots) =>
    db.insertInto(table).values(records.map((_, r) => Object.fromEntries(columns.map((c, i) => [c, slots[r * width + i]]))) as Insertable<DatabaseSchema[T]>[]))
}
