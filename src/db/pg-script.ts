import { type CompiledQuery, createQueryId, PostgresQueryCompiler, sql } from 'kysely'
import type pg from 'pg'
import { planChanged, type PreparingClient } from './prepared-statements.js'

/**
 * Compiles with every value written into the text as a literal (Kysely's own literal syntax: quotes
 * doubled, which is exact under PostgreSQL's default standard_conforming_strings), because a simple
 * query, the only way to send several statements in one round trip, takes no parameters.
 */
class InlineValuesCompiler extends PostgresQueryCompiler {
  protected override appendValue(value: unknown): void {
    this.appendImmediateValue(value)
  }
}

/**
 * A value as an `EXECUTE` argument: a quoted literal, which PostgreSQL reads as the parameter's type, as
 * it reads the text node-pg sends for a bound parameter (numbers and booleans included).
 */
const asArgument = (value: unknown) =>
  value === undefined ? null : typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean' ? String(value) : value

/** `execute <name>(<values as literals>)`. */
export function executeText(name: string, parameters: readonly unknown[]): string {
  if (parameters.length === 0) return `execute ${name}`
  const statement = sql`execute ${sql.raw(name)}(${sql.join(parameters.map(asArgument))})`
  return new InlineValuesCompiler().compileQuery(statement.toOperationNode(), createQueryId()).sql
}

/** A failure of the server's that leaves the connection usable (an SQLSTATE), rather than of the connection. */
const sqlError = (error: unknown) => typeof (error as { code?: unknown })?.code === 'string' && (error as { severity?: unknown }).severity !== undefined

/** The script of `queries` on `client`, preparing there what is not yet. */
async function runOn(client: pg.PoolClient & PreparingClient, queries: readonly CompiledQuery[]): Promise<Array<{ rows: unknown[] }>> {
  const names: string[] = []
  for (const query of queries) {
    const name = await client.prepareOnce(query.sql)
    if (name === undefined) {
      if (queries.length > 1) throw new Error('runTogether: a statement of the script has no prepared name')
      return [await client.query(query.sql, [...query.parameters])]
    }
    names.push(name)
  }
  const results: pg.QueryResult | pg.QueryResult[] = await client.query(queries.map((query, i) => executeText(names[i]!, query.parameters)).join(';\n'))
  return Array.isArray(results) ? results : [results]
}

/**
 * Runs `queries` as one simple query on one pooled connection, so PostgreSQL runs them in one implicit
 * transaction, all or none, in one round trip; each is a prepared statement run by `EXECUTE`
 * (prepared-statements.ts), prepared first on that connection if it is not yet. A lone query whose text
 * has no name runs unnamed with its parameters; several such fail without running, for their caller to
 * run one at a time. Resolves with each query's rows, in order.
 */
export async function runTogether(pool: pg.Pool, queries: readonly CompiledQuery[]): Promise<Array<{ rows: unknown[] }>> {
  const client = await pool.connect() as pg.PoolClient & PreparingClient
  let destroy = false
  try {
    try {
      return await runOn(client, queries)
    } catch (error) {
      if (!planChanged(error)) throw error
      // A table's columns changed under a prepared statement. Nothing of the failed script committed:
      // prepare its statements again and run it once more.
      client.forgetPlans()
      return await runOn(client, queries)
    }
  } catch (error) {
    if (!sqlError(error)) destroy = true
    throw error
  } finally {
    client.release(destroy)
  }
}
