import { type Compilable, type CompiledQuery, type Insertable, PostgresAdapter, type QueryExecutorProvider, type RawBuilder } from 'kysely'
import { nameStatement } from './statement-names.js'
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

/** A part of a template's shape: a name (a literal, a table's), a count, a flag. */
export type ShapePart = string | number | boolean

interface ShapeNode {
  next: Map<ShapePart, ShapeNode> | undefined
  shape: string | undefined
}

const shapeTree: ShapeNode = { next: undefined, shape: undefined }
let shapesNamed = 0

/**
 * A template's shape from its parts, joined by spaces: the same string each time the same parts come,
 * found through a tree of Maps keyed by the parts. A shape made fresh for each query (`insert ${table}
 * ${n}`) was a new string that the templates' Map hashed whole and compared character by character with
 * the one it held, about 1,500 instructions a lookup and a dozen lookups a payment (callgrind,
 * docs/performance.md, thirty-first pass); the parts are literals, counts and names made once (a column
 * list's, another shape), whose hashes V8 keeps, so each step of the walk is a lookup by a known key.
 * Past MAX_SHAPES different shapes (a bug: they are a few dozen) the joined text is made each time.
 */
export function shapeOf(parts: readonly ShapePart[]): string {
  let node = shapeTree
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!
    let child = node.next?.get(part)
    if (child === undefined) {
      if (shapesNamed >= MAX_SHAPES) return parts.join(' ')
      child = { next: undefined, shape: undefined }
      ;(node.next ??= new Map()).set(part, child)
    }
    node = child
  }
  if (node.shape === undefined) {
    shapesNamed++
    node.shape = parts.join(' ')
  }
  return node.shape
}

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
  const parameters = new Array<unknown>(valueOf.length)
  for (let i = 0; i < valueOf.length; i++) parameters[i] = valueOf[i] === -1 ? query.parameters[i] : values[valueOf[i]!]
  // Named members rather than a spread of the query, which V8 copied through its runtime, about 1,100
  // instructions a query (docs/performance.md, twenty-ninth pass).
  return { query: query.query, queryId: query.queryId, sql: query.sql, parameters } as CompiledQuery<R>
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

/** Column lists named so far (columnListName), by their number of columns. */
const columnListsByLength = new Map<number, Array<{ columns: readonly string[], name: string }>>()
let columnListsNamed = 0
/** Lists named at most (our rows have a few dozen); past it a list is named by its own text. */
const MAX_COLUMN_LISTS = 1000

/**
 * A short name for a list of column names, the same for every list of the same names in the same order,
 * for a template's shape: `#3`, or the names in parentheses once MAX_COLUMN_LISTS are named (no name of
 * the one kind can be of the other). It is found by comparing the list with those of its length named
 * before, name by name: a row's property names are V8's internalised strings, so each comparison is of
 * two pointers. Joining the names made a text of hundreds of characters a payment, which the template's
 * Map then hashed whole (docs/performance.md, twenty-ninth pass).
 */
export function columnListName(columns: readonly string[]): string {
  let named = columnListsByLength.get(columns.length)
  if (named === undefined) columnListsByLength.set(columns.length, named = [])
  for (let n = 0; n < named.length; n++) if (sameNames(named[n]!.columns, columns)) return named[n]!.name
  if (columnListsNamed >= MAX_COLUMN_LISTS) return `(${columns.join()})`
  const name = `#${columnListsNamed++}`
  named.push({ columns: [...columns], name })
  return name
}

/** Two lists of the same length hold the same names in the same order. */
function sameNames(a: readonly string[], b: readonly string[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * A row's columns that have a value and their values, in order: Kysely's `values()` leaves an undefined
 * one out. Object.keys and Object.values list a row's members in the same order, without a load by a
 * name V8 cannot predict for each (docs/performance.md, twenty-ninth pass).
 */
function definedColumns(row: Record<string, unknown>): { columns: string[], values: unknown[] } {
  const columns = Object.keys(row)
  const values = Object.values(row)
  if (!values.includes(undefined)) return { columns, values }
  const defined = { columns: [] as string[], values: [] as unknown[] }
  for (let i = 0; i < columns.length; i++) {
    if (values[i] === undefined) continue
    defined.columns.push(columns[i]!)
    defined.values.push(values[i])
  }
  return defined
}

/**
 * `insert into <table> (<columns>) values ...` for rows that name the same columns (as Kysely's
 * `values()` does, a column whose value is undefined is left out), from a template per table, column list
 * and row count. Rows that name different columns are built by Kysely as usual. Every payment runs it
 * three to five times, so it lists each row's columns once and compares them with the first row's
 * (docs/performance.md, eighth pass); the shape names the list by columnListName.
 */
export function insertRows<T extends Table>(db: Executor, table: T, rows: readonly Insertable<DatabaseSchema[T]>[]): Compilable<unknown> | CompiledQuery<unknown> {
  const records = rows as readonly Record<string, unknown>[]
  const first = records.length === 0 ? undefined : definedColumns(records[0]!)
  const columns = first?.columns ?? []
  if (columns.length === 0) return db.insertInto(table).values(rows as Insertable<DatabaseSchema[T]>[])
  const width = columns.length
  const values = first!.values
  for (let r = 1; r < records.length; r++) {
    const row = definedColumns(records[r]!)
    if (row.columns.length !== width || !sameNames(row.columns, columns)) return db.insertInto(table).values(rows as Insertable<DatabaseSchema[T]>[])
    for (const value of row.values) values.push(value)
  }
  return fromTemplate(db, shapeOf(['insert', table, records.length, columnListName(columns)]), values, (slots) =>
    db.insertInto(table).values(records.map((_, r) => Object.fromEntries(columns.map((c, i) => [c, slots[r * width + i]]))) as Insertable<DatabaseSchema[T]>[]))
}
