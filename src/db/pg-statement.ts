import { type RawBuilder, sql } from 'kysely'
import { columnListName, shapeOf } from './query-template.js'
import type { DatabaseSchema } from './schema.js'

/**
 * A step of a PostgreSQL statement made of data-modifying CTEs that inserts rows into `table`, taking
 * effect only if the earlier step `after` produced a row.
 *
 * One row: its values (in the order of `columns`) are one parameter each. In `insert … select $1, $2`
 * PostgreSQL types each parameter by its target column, so the statement, prepared once, needs no casts
 * and PostgreSQL parses no JSON: json_populate_recordset's parsing was about a tenth of PostgreSQL's CPU
 * a payment (docs/performance.md, sixteenth pass).
 *
 * Many rows (more than ROW_STEPS_MAX: an account's webhook endpoints, for jobs): one JSON parameter read
 * by json_populate_recordset, typed by the table itself, so that a statement's text, and the number of
 * statements each connection prepares, do not grow with the number of rows. Fewer go as a step each.
 */
export function insertAfter(table: keyof DatabaseSchema, columns: readonly string[], values: InsertedValues, after: string): RawBuilder<unknown> {
  const list = sql.join(columns.map((column) => sql.ref(column)))
  const rows = 'row' in values
    ? sql`select ${sql.join(values.row)}`
    : sql`select ${list} from json_populate_recordset(null::${sql.table(table)}, ${values.json}::json)`
  return sql`insert into ${sql.table(table)} (${list})
    ${rows}
    where exists (select 1 from ${sql.table(after)})`
}

/**
 * Up to this many rows go in as steps of one row each, a parameter a value; more (an account with many
 * webhook endpoints has a job for each) as one JSON parameter. A payment's two events as JSON cost node
 * about 47,000 instructions a payment to escape the JSON their `data` holds, and PostgreSQL its parsing
 * back (docs/performance.md, twenty-seventh pass); as row steps each `data` goes in as it is. A PostgreSQL
 * union of parameters is typed text, not by the target columns, so rows cannot share one step's select.
 */
export const ROW_STEPS_MAX = 4

/** Appends to `steps` the steps that insert `rows` into `table` after `after`: one a row, or one for all of them. */
export function addInsertSteps(steps: InsertStep[], table: keyof DatabaseSchema, rows: readonly object[], after: string): void {
  if (rows.length > ROW_STEPS_MAX) steps.push(insertStep(table, rows, after))
  else for (const row of rows) steps.push(insertStep(table, [row], after))
}

/** What a step inserts: one row's values, or the JSON array of several rows. */
export type InsertedValues = { row: readonly unknown[] } | { json: unknown }

/**
 * How `rows` travel into `table` (see insertAfter): their columns, their shape for a template
 * (query-template.ts: the table, the kind and the column list's name), their values in order, and the
 * step's InsertedValues from the slots that stand for those values.
 */
export interface InsertStep {
  table: keyof DatabaseSchema
  after: string
  columns: readonly string[]
  shape: string
  values: readonly unknown[]
  slotted(slots: readonly unknown[]): InsertedValues
}

const asJson = (slots: readonly unknown[]): InsertedValues => ({ json: slots[0] })
const asRow = (slots: readonly unknown[]): InsertedValues => ({ row: slots })

function insertStep(table: keyof DatabaseSchema, rows: readonly object[], after: string): InsertStep {
  const columns = Object.keys(rows[0]!)
  const many = rows.length > 1
  return {
    table,
    after,
    columns,
    shape: shapeOf([table, many ? 'json' : 'row', columnListName(columns)]),
    // Object.values lists a row's values in the order Object.keys lists its names.
    values: many ? [JSON.stringify(rows)] : Object.values(rows[0]!),
    slotted: many ? asJson : asRow,
  }
}
