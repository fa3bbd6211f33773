import assert from 'node:assert/strict'
import { type Kysely, sql } from 'kysely'

/**
 * The plan PostgreSQL would keep for the statement prepared as `name` on this connection once it
 * settles on a generic plan (as it may after five runs): `EXPLAIN EXECUTE` under
 * `plan_cache_mode = force_generic_plan`, without costs, one line a plan node.
 */
export async function genericPlan(connection: Kysely<any>, name: string, args: readonly unknown[]): Promise<string> {
  await sql`set plan_cache_mode = force_generic_plan`.execute(connection)
  try {
    const { rows } = await sql<{ 'QUERY PLAN': string }>`explain (costs off) execute ${sql.id(name)}(${sql.join(args.map((arg) => sql.lit(arg)))})`.execute(connection)
    return rows.map((row) => row['QUERY PLAN']).join('\n')
  } finally {
    await sql`reset plan_cache_mode`.execute(connection)
  }
}

/** The generic plan (above) of the one statement prepared on this connection whose text matches `pattern`. */
export async function preparedPlan(connection: Kysely<any>, pattern: RegExp, args: readonly unknown[]): Promise<string> {
  const { rows } = await sql<{ name: string, statement: string }>`select name, statement from pg_prepared_statements`.execute(connection)
  const matching = rows.filter((row) => pattern.test(row.statement))
  assert.equal(matching.length, 1, `one prepared statement matches ${pattern}: ${rows.map((row) => row.statement).join('\n')}`)
  return genericPlan(connection, matching[0]!.name, args)
}
