import type SQLite from 'better-sqlite3'
import { compileRowBuilder, type RowBuilder } from './row-builder.js'

/** Per statement: the function that makes its rows. */
const builders = new WeakMap<SQLite.Statement, RowBuilder>()

/**
 * The rows of a statement that returns rows, as better-sqlite3's `all()` returns them: one object a row,
 * its columns as properties in order (a repeated name keeps its first place and its last value).
 *
 * better-sqlite3 makes each row by setting its columns one by one through V8's API, looking each column's
 * name up in V8's string table and walking the object's shape from empty, for every row. Under load that
 * was 6 % of the server's CPU in a GET /payments/:id (perf, docs/performance.md, fifth pass). Instead the
 * statement returns arrays (`raw`) and a function compiled once for its columns (row-builder.ts) builds
 * each row from an object literal. One difference: a column named `__proto__` is an own property, as
 * node-pg makes it (db/pg-rows.ts), where better-sqlite3's assignment sets nothing for a text value.
 */
export function allRows(statement: SQLite.Statement, parameters: readonly unknown[]): unknown[] {
  let build = builders.get(statement)
  if (build === undefined) builders.set(statement, build = compileBuilder(statement))
  const rows = (bindsAsArguments(parameters) ? statement.all(...parameters) : statement.all(parameters as unknown[])) as unknown[][]
  return rows.map(build)
}

/** A statement that returns no rows, run: its changes as better-sqlite3's `run()` reports them. */
export function runWrite(statement: SQLite.Statement, parameters: readonly unknown[]): SQLite.RunResult {
  return bindsAsArguments(parameters) ? statement.run(...parameters) : statement.run(parameters as unknown[])
}

/** More parameters than this go as one array: a spread call puts every one on the stack. */
const MAX_ARGUMENTS = 256

/**
 * Whether the parameters can go to better-sqlite3 as arguments of their own, which it reads straight
 * from the call. Given one array, it reads each element back through V8's API (`v8::Object::Get`,
 * about 430 instructions a parameter; a SQLite payment binds about 70: docs/performance.md, thirtieth
 * pass). An array or plain object would mean something else as an argument (its elements bound in its
 * place, or named parameters), so a list holding any object but a Buffer goes as an array, which
 * better-sqlite3 refuses as it always did.
 */
function bindsAsArguments(parameters: readonly unknown[]): boolean {
  if (parameters.length > MAX_ARGUMENTS) return false
  for (let i = 0; i < parameters.length; i++) {
    const value = parameters[i]
    if (typeof value === 'object' && value !== null && !(value instanceof Uint8Array)) return false
  }
  return true
}

function compileBuilder(statement: SQLite.Statement): RowBuilder {
  const names = statement.columns().map((column) => column.name)
  statement.raw(true)
  return compileRowBuilder(names)
}
