import type { Compilable, CompiledQuery } from 'kysely'
import type { Executor } from './database.js'

/** Stands for the i-th argument while a reusable query is compiled; no real value looks like it. */
const placeholder = (i: number) => `\u0000reusable-query-argument-${i}\u0000`

/**
 * A query of a fixed shape, compiled once per dialect and then run with new arguments, so a hot lookup
 * builds and compiles no query per request. `build` gets one placeholder per argument, to put where the
 * argument goes; each must become a parameter. For the queries every request of a route runs.
 */
export function reusableQuery<R, A extends string[]>(arity: A['length'], build: (db: Executor, ...args: string[]) => Compilable<R>) {
  // Keyed by the dialect's adapter, which a Kysely instance shares with its transactions.
  const byAdapter = new WeakMap<object, { query: CompiledQuery<R>, argumentOf: number[] }>()
  const placeholders = Array.from({ length: arity }, (_, i) => placeholder(i))
  const compile = (db: Executor) => {
    const query = build(db, ...placeholders).compile()
    // For each parameter: the argument it takes, or -1 for a constant of the query itself.
    const argumentOf = query.parameters.map((p) => placeholders.indexOf(p as string))
    if (placeholders.some((_, i) => !argumentOf.includes(i))) throw new Error(`reusableQuery: an argument is not a parameter of ${query.sql}`)
    return { query, argumentOf }
  }
  return async (db: Executor, ...args: A): Promise<R[]> => {
    const adapter = db.getExecutor().adapter
    let compiled = byAdapter.get(adapter)
    if (compiled === undefined) byAdapter.set(adapter, compiled = compile(db))
    const { query, argumentOf } = compiled
    const parameters = argumentOf.map((a, i) => (a === -1 ? query.parameters[i] : args[a]))
    return (await db.executeQuery<R>({ ...query, parameters })).rows
  }
}
