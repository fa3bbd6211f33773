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
  return (statement.all(parameters as unknown[]) as unknown[][]).map(build)
}

function compileBuilder(statement: SQLite.Statement): RowBuilder {
  const names = statement.columns().map((column) => column.name)
  statement.raw(true)
  return compileRowBuilder(names)
}
