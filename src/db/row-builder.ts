/** Makes one row object from its values, given in its columns' order. */
export type RowBuilder = (values: readonly unknown[]) => Record<string, unknown>

/**
 * A function, compiled once for a list of column names, that makes a row from its values with one object
 * literal: V8 creates the literal's shape once, so every row made by it shares that shape and stays a fast
 * object. Both drivers' own rows set their columns one at a time by name through a generic path, at
 * several hundred instructions a column (better-sqlite3 through V8's API, node-pg by keyed stores on a
 * copy of a template object; docs/performance.md, fifth and twenty-sixth passes). A repeated name keeps its
 * first place and its last value, as in both drivers. Column names are SQL's; JSON.stringify makes each a
 * string literal. A column named `__proto__` would set the prototype in a literal, so then the columns
 * are defined one by one instead (Object.fromEntries defines `__proto__` as an own property, as node-pg
 * does; better-sqlite3's own rows drop it).
 */
export function compileRowBuilder(names: readonly string[]): RowBuilder {
  if (names.includes('__proto__')) return (values) => Object.fromEntries(names.map((name, i) => [name, values[i]]))
  // Compiled from the column names only, never from values.
  return new Function('row', `return {${names.map((name, i) => `${JSON.stringify(name)}: row[${i}]`).join(', ')}}`) as RowBuilder
}

/** Copies some columns of a row object, in the order given. */
export type RowCopier = (row: Readonly<Record<string, unknown>>) => Record<string, unknown>

/**
 * A function, compiled once for a list of column names, that copies those columns of a row into a new
 * object literal: as compileRowBuilder, one shape for every copy, and loads by constant names that V8
 * caches for the rows' own shape, where a loop over the columns loads and stores each through V8's
 * generic keyed path (about 260 instructions a column of a PostgreSQL GET; docs/performance.md,
 * twenty-sixth pass).
 */
export function compileRowCopier(names: readonly string[]): RowCopier {
  if (names.includes('__proto__')) return (row) => Object.fromEntries(names.map((name) => [name, row[name]]))
  // Compiled from the column names only, never from values.
  return new Function('row', `return {${names.map((name) => `${JSON.stringify(name)}: row[${JSON.stringify(name)}]`).join(', ')}}`) as RowCopier
}
