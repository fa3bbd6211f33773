import type { CompiledQuery } from 'kysely'
import type pg from 'pg'
import { isServerError } from './errors.js'
import type { PreparingClient } from './prepared-statements.js'
import { planChanged } from './statement-names.js'

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
 * Whether `$w$…$w$` holds `text` exactly. PostgreSQL then takes the text as it is, with nothing to
 * escape, so the JSON a payment sends (which holds JSON in strings, hence backslashes) is not copied twice
 * more by quoteLiteral's replacements, which made most of the garbage of a PostgreSQL payment
 * (docs/performance.md, seventh pass). It is exact unless the tag can end the literal early: the text
 * holds the tag, or ends with all of it but its last `$`. Those texts are quoted by quoteLiteral.
 */
const dollarQuotable = (text: string) => !text.includes(DOLLAR_TAG) && !text.endsWith(DOLLAR_TAG.slice(0, -1))

/**
 * The values of our statements are strings, numbers, booleans and nulls; anything else is refused
 * before a connection is taken.
 */
export function checkArguments(queries: readonly CompiledQuery[]): void {
  for (const query of queries) {
    for (const value of query.parameters) {
      if (value === null || value === undefined) continue
      const type = typeof value
      if (type === 'string' || type === 'number' || type === 'bigint' || type === 'boolean') continue
      throw new TypeError(`a ${type} value cannot be an EXECUTE argument`)
    }
  }
}

/**
 * The simple query that runs each query by its prepared name with its values as literals, which
 * PostgreSQL reads as the parameters' types, as it reads the text node-pg sends for bound parameters:
 * `execute name(arg, …);\nexecute …`. Its pieces go into one array sized for them up front and are
 * joined once: each dollar-quoted string as the tag (with the separator before it), its text and the tag,
 * so that the text is copied once. Joining each query's arguments and then the queries copied a payment's
 * kilobytes twice, and each quote made strings of its own: together the largest item of a PostgreSQL
 * payment's garbage (docs/performance.md, twenty-fourth pass). Slots left empty join as nothing.
 */
export function executeScript(names: readonly string[], queries: readonly CompiledQuery[]): string {
  let slots = 0
  for (const query of queries) slots += 3 + 3 * query.parameters.length
  const parts = new Array<string>(slots)
  let n = 0
  for (let i = 0; i < names.length; i++) {
    parts[n++] = i === 0 ? 'execute ' : ';\nexecute '
    parts[n++] = names[i]!
    const values = queries[i]!.parameters
    for (let j = 0; j < values.length; j++) {
      const value = values[j]
      if (value === null || value === undefined) {
        parts[n++] = j === 0 ? '(null' : ', null'
      } else if (typeof value === 'string' && dollarQuotable(value)) {
        parts[n++] = j === 0 ? `(${DOLLAR_TAG}` : `, ${DOLLAR_TAG}`
        parts[n++] = value
        parts[n++] = DOLLAR_TAG
      } else {
        parts[n++] = j === 0 ? '(' : ', '
        parts[n++] = quoteLiteral(typeof value === 'string' ? value : String(value))
      }
    }
    if (values.length > 0) parts[n++] = ')'
  }
  return parts.join('')
}

/** The script of `queries` on `client`, preparing there what is not yet. */
async function runOn(client: pg.PoolClient & PreparingClient, queries: readonly CompiledQuery[]): Promise<Array<{ rows: unknown[] }>> {
  const names: string[] = []
  for (const query of queries) {
    const name = await client.prepareOnce(query.sql)
    if (name === undefined) return runUnnamed(client, queries)
    names.push(name)
  }
  const results: pg.QueryResult | pg.QueryResult[] = await client.query(executeScript(names, queries))
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
  checkArguments(queries)
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
    // The server's own error leaves the connection usable; any other failure may have broken it.
    if (!isServerError(error)) destroy = true
    throw error
  } finally {
    client.release(destroy)
  }
}
