import type pg from 'pg'
import { compileRowBuilder, type RowBuilder } from './row-builder.js'

interface Shape {
  names: string[]
  build: RowBuilder
}

/** Column lists at most: an application's queries have few; the bound only guards memory against a bug. */
const MAX_SHAPES = 1000
/** The shapes seen, by their first column's name (a lookup by a list would first have to join it). */
const shapesByFirstName = new Map<string, Shape[]>()
let shapeCount = 0

type Field = Pick<pg.FieldDef, 'name'>

/** The row builder for these columns, compiled the first time they are seen. */
function builderFor(fields: readonly Field[]): RowBuilder {
  const first = fields[0]!.name
  let shapes = shapesByFirstName.get(first)
  if (shapes !== undefined) {
    for (const shape of shapes) if (sameNames(shape.names, fields)) return shape.build
  }
  if (shapeCount >= MAX_SHAPES) {
    shapesByFirstName.clear()
    shapeCount = 0
    shapes = undefined
  }
  const names = fields.map((field) => field.name)
  const shape = { names, build: compileRowBuilder(names) }
  if (shapes === undefined) shapesByFirstName.set(first, shapes = [])
  shapes.push(shape)
  shapeCount++
  return shape.build
}

function sameNames(names: readonly string[], fields: readonly Field[]): boolean {
  if (names.length !== fields.length) return false
  for (let i = 0; i < names.length; i++) if (names[i] !== fields[i]!.name) return false
  return true
}

/**
 * Turns the rows of a result node-pg read with `rowMode: 'array'` into the objects it makes by default:
 * one a row, its columns as properties in order, a repeated name in its first place with its last value.
 * node-pg's own objects copy a template object made from a dictionary (V8's slow path for a copy, about
 * 4,700 instructions a row of a payment) and then set each column by a keyed store that V8 cannot cache
 * across the application's many shapes (about 170 a column), and the rows they make are slow to read
 * afterwards too. Here a function compiled once per column list (row-builder.ts) makes each row from an
 * object literal (docs/performance.md, twenty-sixth pass). The columns are matched by their names on
 * every result, so a query whose columns change (a migration) gets rows of its new columns.
 */
export function objectRows(result: pg.QueryResult): void {
  const rows = result.rows as unknown[][]
  if (rows.length === 0) return
  const build = builderFor(result.fields)
  for (let i = 0; i < rows.length; i++) (rows as unknown[])[i] = build(rows[i]!)
}
