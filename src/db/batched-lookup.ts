import { type Compilable, PostgresAdapter, type RawBuilder, sql } from 'kysely'
import type { Executor } from './database.js'
import { isDatabaseUnavailable } from './errors.js'
import { compilable, fromTemplate } from './query-template.js'
import { reusableQuery } from './reusable-query.js'
import { compileRowCopier, type RowCopier } from './row-builder.js'

/** Keys in one query at most: the arrays stay short, and a burst makes several queries in parallel. */
const MAX_KEYS = 64

interface Waiting {
  args: string[]
  resolve(rows: unknown[]): void
  reject(error: unknown): void
}

let lookups = 0

/** The two characters a quoted element of an array literal escapes, with a backslash. */
const ESCAPED_IN_ELEMENT = /[\\"]/g

/**
 * The text[] literal of `values`, each element quoted (`{"a","b\\"c"}`): what node-pg writes for an
 * array of strings (its `arrayString`), which escaped every element with two regular-expression replaces
 * in code V8 left at its baseline tier, about 1,500 instructions an element, 4,800 a PostgreSQL GET
 * (callgrind, docs/performance.md, twenty-ninth pass). Keys rarely hold either character, so most are
 * copied as they are.
 */
export function textArrayLiteral(values: readonly string[]): string {
  let literal = '{'
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!
    const element = value.includes('"') || value.includes('\\') ? value.replace(ESCAPED_IN_ELEMENT, '\\$&') : value
    literal += i === 0 ? `"${element}"` : `,"${element}"`
  }
  return `${literal}}`
}

/**
 * A lookup by key that PostgreSQL answers for many callers in one round trip. Lookups through the
 * database itself (not a transaction) submitted in the same turn of the event loop go together as one
 * query, `many`. It reads the keys from `keys`, a relation `q` with a text column for each of `fields`
 * and the number `i` of the caller (from 1), made from one text array a field (`unnest(…) with
 * ordinality`), and each row it returns carries the `i` it answers. PostgreSQL reads the arrays for about
 * a quarter less CPU a key than the JSON array of objects (`json_to_recordset`) they replaced
 * (docs/performance.md, twenty-sixth pass). Its rows
 * come back as rows, which node-pg parses as it parses the one-key form's: aggregating them into one
 * JSON value (json_agg) nearly doubled PostgreSQL's CPU a query and saved node nothing measurable at a
 * batch's usual size (docs/performance.md, tenth pass). On a busy server a round trip costs node-pg,
 * the kernel and PostgreSQL more than such a query does (docs/performance.md, fourth pass). Everything
 * else (SQLite, which reads in-process; a transaction) runs `one` (a reusableQuery). A batch that fails
 * for another reason than an unavailable database is retried key by key, so one caller's key never fails
 * another's. Both must find the same rows:
 * test/unit/batched-lookup.test.ts holds the lookups of this codebase to that.
 *
 * At most one batch of a lookup is on its way to a database at a time: the lookups submitted while it is
 * go together as the next one, once it is answered. A server starts at most 16 reads a turn
 * (http/turn-budget.ts), so a batch a turn holds 16 keys at most, while an answer takes a few turns to
 * come back under load; each query costs node-pg, the loopback socket and PostgreSQL about the same whatever
 * its number of keys (docs/performance.md, ninth pass). A lookup never waits for more than the answer
 * already on its way, and runs after it was submitted, so it sees every commit made before then.
 *
 * `many` should look each key up in a LATERAL subquery with a LIMIT, or a correlated subquery, so that
 * PostgreSQL runs one index lookup a key whatever it guesses of the number of keys.
 */
export function batchedLookup<R, A extends string[]>(
  fields: { [I in keyof A]: string },
  one: (db: Executor, ...args: A) => Compilable<R>,
  many: (keys: RawBuilder<unknown>) => RawBuilder<R & { i: number }>,
) {
  const shape = `batched lookup ${lookups++}`
  const single = reusableQuery<R, A>(one)
  const waitingByDb = new WeakMap<Executor, Waiting[]>()
  /** Copies a row of `many` without its `i`; compiled for its columns, which a migration may change. */
  let answerRow: { columns: string[], copy: RowCopier } | undefined

  function copierFor(row: Record<string, unknown>): RowCopier {
    const columns = Object.keys(row)
    if (answerRow === undefined || columns.length !== answerRow.columns.length || columns.some((column, n) => column !== answerRow!.columns[n])) {
      answerRow = { columns, copy: compileRowCopier(columns.filter((column) => column !== 'i')) }
    }
    return answerRow.copy
  }
  /** Databases with a batch of this lookup on its way: keys submitted meanwhile wait for the next one. */
  const inFlight = new WeakSet<Executor>()

  function flush(db: Executor): void {
    const waiting = waitingByDb.get(db)
    if (waiting === undefined) return
    waitingByDb.delete(db)
    inFlight.add(db)
    const chunks: Array<Promise<void>> = []
    for (let start = 0; start < waiting.length; start += MAX_KEYS) chunks.push(lookUp(db, waiting.slice(start, start + MAX_KEYS)))
    // lookUp answers its callers whatever happens; allSettled only so that nothing can keep inFlight set.
    void Promise.allSettled(chunks).then(() => {
      inFlight.delete(db)
      // A turn later, as for the first: the requests of the turn that read the answer join the next batch.
      if (waitingByDb.has(db)) setImmediate(flush, db)
    })
  }

  /** Answers every caller of `chunk`, whatever happens: none is left waiting. */
  async function lookUp(db: Executor, chunk: Waiting[]): Promise<void> {
    let rows: Array<Record<string, unknown>>
    try {
      // One array a field, its n-th element the n-th caller's, sent as its text[] literal.
      const columns = fields.map((_, n) => textArrayLiteral(chunk.map((w) => w.args[n]!)))
      const answer = await db.executeQuery(fromTemplate(db, shape, columns, (slots) => compilable(db, many(keysRelation(slots)))))
      rows = answer.rows as Array<Record<string, unknown>>
    } catch (error) {
      // A database that cannot answer fails every caller at once, as their own queries would (not after
      // a second timeout each); any other failure may be one caller's key's, so each is looked up alone.
      if (isDatabaseUnavailable(error)) for (const w of chunk) w.reject(error)
      else for (const w of chunk) single(db, ...(w.args as A)).then(w.resolve, w.reject)
      return
    }
    const answers: unknown[][] = chunk.map(() => [])
    // The rows of one result share their columns.
    const copy = rows.length > 0 ? copierFor(rows[0]!) : undefined
    for (const row of rows) {
      const answer = answers[(row.i as number) - 1]
      if (answer === undefined) {
        for (const w of chunk) w.reject(new Error(`batched lookup ${shape}: a row answers no key (i = ${String(row.i)})`))
        return
      }
      answer.push(copy!(row))
    }
    chunk.forEach((w, i) => w.resolve(answers[i]!))
  }

  /** `q`: the keys, a text column a field, and `i`, the caller's number from 1 (a bigint, which node-pg reads as a number here). */
  function keysRelation(slots: readonly string[]): RawBuilder<unknown> {
    return sql`unnest(${sql.join(slots.map((slot) => sql`${slot}::text[]`))}) with ordinality as q(${sql.join(fields.map((field) => sql.id(field)))}, i)`
  }

  return (db: Executor, ...args: A): Promise<R[]> => {
    if (db.isTransaction || !(db.getExecutor().adapter instanceof PostgresAdapter)) return single(db, ...args)
    return new Promise<R[]>((resolve, reject) => {
      let waiting = waitingByDb.get(db)
      if (waiting === undefined) {
        waitingByDb.set(db, waiting = [])
        // A turn later: the lookups of the requests this turn started go together. With a batch on its
        // way, they wait for its answer (flush above), with the lookups of the turns until then.
        if (!inFlight.has(db)) setImmediate(flush, db)
      }
      waiting.push({ args, resolve: resolve as (rows: unknown[]) => void, reject })
    })
  }
}
