import type { CompiledQuery } from 'kysely'
import type pg from 'pg'
import { planChanged, type PreparingClient } from './prepared-statements.js'

/**
 * node-pg's escapeLiteral, the same text by two regular expressions: quotes doubled, and backslashes too
 * in an `E'…'` string, so the literal is exact whatever standard_conforming_strings says. node-pg builds
 * it a character at a time, which on the kilobytes of JSON a payment sends cost a third of PostgreSQL
 * `POST /payments` throughput. test/unit/pg-script.test.ts holds the two to the same output.
 */
export function quoteLiteral(text: string): string {
  const quoted = `'${text.replace(/'/g, "''")}'`
  return text.includes('\\') ? ` E${quoted.replace(/\\/g, '\\\\')}` : quoted
}

/** The tag of a dollar-quoted literal (PostgreSQL's `$tag$…$tag$`). */
const DOLLAR_TAG = '$w$'

/**
 * A string as a literal. Dollar-quoted when that is exact: PostgreSQL then takes the text as it is, with
 * nothing to escape, so the JSON a payment sends (which holds JSON in strings, hence backslashes) is not
 * copied twice more by quoteLiteral's replacements, which made most of the garbage of a PostgreSQL
 * payment (docs/performance.md, seventh pass). It is exact unless the tag can end the literal early: the
 * text holds the tag, or ends with all of it but its last `$`. Those texts are quoted by quoteLiteral.
 */
export function asLiteral(text: string): string {
  if (text.includes(DOLLAR_TAG) || text.endsWith(DOLLAR_TAG.slice(0, -1))) return quoteLiteral(text)
  return DOLLAR_TAG + text + DOLLAR_TAG
}

/**
 * A value as an `EXECUTE` argument: a literal, which PostgreSQL reads as the parameter's type, as it
 * reads the text node-pg sends for a bound parameter. The values of our statements are strings,
 * numbers, booleans and nulls; anything else is refused before a connection is taken.
 */
function asArgument(value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'string') return asLiteral(value)
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return quoteLiteral(String(value))
  throw new TypeError(`runTogether: a ${typeof value} value cannot be an EXECUTE argument`)
}

/** A failure of the server's that leaves the connection usable (an SQLSTATE), rather than of the connection. */
const sqlError = (error: unknown) => typeof (error as { code?: unknown })?.code === 'string' && (error as { severity?: unknown }).severity !== undefined

/** The script of `queries` on `client`, preparing there what is not yet. */
async function runOn(client: pg.PoolClient & PreparingClient, queries: readonly CompiledQuery[], args: readonly string[][]): Promise<Array<{ rows: unknown[] }>> {
  const names: string[] = []
  for (const query of queries) {
    const name = await client.prepareOnce(query.sql)
    if (name === undefined) return runUnnamed(client, queries)
    names.push(name)
  }
  const script = names.map((name, i) => (args[i]!.length === 0 ? `execute ${name}` : `execute ${name}(${args[i]!.join(', ')})`)).join(';\n')
  const results: pg.QueryResult | pg.QueryResult[] = await client.query(script)
  return Array.isArray(results) ? results : [results]
}

/**
 * Without names (prepared statements off, or the process out of room for more): the queries one round
 * trip each with their parameters, in one explicit transaction.
 */
async function runUnnamed(client: pg.PoolClient, queries: readonly CompiledQuery[]): Promise<Array<{ rows: unknown[] }>> {
  if (queries.length === 1) return [await client.query(queries[0]!.sql, [...queries[0]!.parameters])]
  await client.query('begin')
  try {
    const results: Array<{ rows: unknown[] }> = []
    for (const query of queries) results.push(await client.query(query.sql, [...query.parameters]))
    await client.query('commit')
    return results
  } catch (error) {
    await client.query('rollback').catch(() => {})
    throw error
  }
}

/**
 * Runs `queries` as one simple query on one pooled connection, so PostgreSQL runs them in one implicit
 * transaction, all or none, in one round trip; each is a prepared statement run by `EXECUTE`
 * (prepared-statements.ts), prepared first on that connection if it is not yet. Queries without a
 * prepared name run unnamed, in one transaction. Resolves with each query's rows, in order.
 */
export async function runTogether(pool: pg.Pool, queries: readonly CompiledQuery[]): Promise<Array<{ rows: unknown[] }>> {
  const args = queries.map((query) => query.parameters.map(asArgument))
  const client = await pool.connect() as pg.PoolClient & PreparingClient
  let destroy = false
  try {
    try {
      return await runOn(client, queries, args)
    } catch (error) {
      if (!planChanged(error)) throw error
      // A table's columns changed under a prepared statement. Nothing of the failed script committed:
      // prepare its statements again and run it once more.
      client.forgetPlans()
      return await runOn(client, queries, args)
    }
  } catch (error) {
    if (!sqlError(error)) destroy = true
    throw error
  } finally {
    client.release(destroy)
  }
}
