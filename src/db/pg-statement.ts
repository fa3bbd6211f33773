import { type RawBuilder, sql } from 'kysely'
import type { DatabaseSchema } from './schema.js'

/**
 * One step of a PostgreSQL statement made of data-modifying CTEs: `insert into <table> select … from
 * json_populate_recordset(…)`, typed by the table itself (so rows travel as one JSON parameter, `json`,
 * with no bound-parameter limit), taking effect only if the earlier step `after` produced a row.
 * `columns`: those of every row in `json`.
 */
export function insertJsonAfter(table: keyof DatabaseSchema, columns: readonly string[], json: string, after: string): RawBuilder<unknown> {
  const list = sql.join(columns.map((column) => sql.ref(column)))
  return sql`insert into ${sql.table(table)} (${list})
    select ${list} from json_populate_recordset(null::${sql.table(table)}, ${json}::json)
    where exists (select 1 from ${sql.table(after)})`
}
