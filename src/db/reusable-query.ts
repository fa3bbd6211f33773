import type { Compilable, CompiledQuery } from 'kysely'
import type { Executor } from './database.js'
import { fromTemplate } from './query-template.js'
import { directReaderOf } from './sqlite-driver.js'

let queries = 0

/**
 * A query of a fixed shape, compiled once per dialect and then run with new arguments, so a hot lookup
 * builds and compiles no query per request (query-template.ts). `build` gets one placeholder per
 * argument, to put where the argument goes; each must become a parameter. For the queries every
 * request of a route runs.
 *
 * On the SQLite store, a read through the database itself (`db.kysely`, outside any transaction) runs
 * directly on the reader connection's cached statement (sqlite-driver.ts, direct reads): it sees the
 * last COMMIT, as it would through Kysely, but neither waits for the writer's lock (a group commit holds
 * it across turns until its fsync) nor goes through Kysely's executor (about 4.5 KB and several promise
 * hops a query). A transaction, PostgreSQL, `:memory:` and a statement that is not a plain read take
 * Kysely's path, as before.
 */
export function reusableQuery<R, A extends string[]>(build: (db: Executor, ...args: A) => Compilable<R>) {
  const shape = `reusable ${queries++}`
  return async (db: Executor, ...args: A): Promise<R[]> => {
    // readQuery's body, inline: an async function returning another's promise costs the hot lookups a hop.
    const query = fromTemplate(db, shape, args, (slots) => build(db, ...(slots as A)))
    const rows = directReaderOf(db)?.read(query)
    if (rows !== undefined) return rows as R[]
    return (await db.executeQuery<R>(query)).rows
  }
}

/** A compiled read's rows: on SQLite's reader connection directly where it can (above), else through Kysely. */
export async function readQuery<R>(db: Executor, query: CompiledQuery<R>): Promise<R[]> {
  const rows = directReaderOf(db)?.read(query)
  if (rows !== undefined) return rows as R[]
  return (await db.executeQuery<R>(query)).rows
}
