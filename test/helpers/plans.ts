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
