import { type RawBuilder, sql } from 'kysely'
import type { DatabaseSchema } from './schema.js'

/**
 * One step of a PostgreSQL statement made of data-modifying CTEs: `insert into <table> select … from
 * json_populate_recordset(…)`, typed by the table itself (so rows travel as one JSON parameter, with no
 * bound-parameter limit), taking effect only if the earlier step `after` produced a row.
 */
export function insertRowsAfter(table: keyof DatabaseSchema, rows: object[], after: string): RawBuilder<unknown> {
  const columns = sql.join(Object.keys(rows[0]!).map((column) => sql.ref(column)))
  return sql`insert into ${sql.table(table)} (${columns})
    select ${columns} from json_populate_recordset(null::${sql.table(table)}, ${JSON.stringify(rows)}::json)
    where exists (select 1 from ${sql.table(after)})`
}
