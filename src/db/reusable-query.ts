import type { Compilable } from 'kysely'
import type { Executor } from './database.js'
import { fromTemplate } from './query-template.js'

let queries = 0

/**
 * A query of a fixed shape, compiled once per dialect and then run with new arguments, so a hot lookup
 * builds and compiles no query per request (query-template.ts). `build` gets one placeholder per
 * argument, to put where the argument goes; each must become a parameter. For the queries every
 * request of a route runs.
 */
export function reusableQuery<R, A extends string[]>(build: (db: Executor, ...args: A) => Compilable<R>) {
  const shape = `reusable ${queries++}`
  return async (db: Executor, ...args: A): Promise<R[]> => {
    const query = fromTemplate(db, shape, args, (slots) => build(db, ...(slots as A)))
    return (await db.executeQuery<R>(query)).rows
  }
}
