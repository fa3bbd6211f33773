import pg from 'pg'
import { objectRows } from './pg-rows.js'
import { nameStatement, planChanged, statementName } from './statement-names.js'

/**
 * Named prepared statements on PostgreSQL, for the statements built from a template
 * (query-template.ts): PostgreSQL parses and plans an unnamed statement on every run, which for a
 * payment's write costs about three times its execution (docs/performance.md, fourth pass). A statement
 * with a name is parsed once per connection, and planned once when its generic plan is as good.
 *
 * The name is the process's for that SQL text, the same on every connection. Each connection prepares it
 * on first use: node-pg does so for a query sent with a name (the extended protocol), and
 * `PreparingClient.prepareOnce` for a statement run with SQL `EXECUTE` from a script.
 *
 * One thing a prepared statement does not survive: a change of its result's columns (another process
 * migrated a table its `select *` reads), which PostgreSQL answers with "cached plan must not change
 * result type" at every later run. The connection then prepares the text again under a new name; a
 * statement run outside a transaction is retried at once, one inside fails with its transaction.
 */

type QueryResult = pg.QueryResult<Record<string, unknown>>

/** A query's caller, until it has its answer or its error (emptied then, so that a late answer reaches no one). */
interface Pending {
  resolve?: ((result: QueryResult) => void) | undefined
  reject?: ((error: Error) => void) | undefined
}

/** A query unanswered for the read timeout: its caller fails, and so does the connection (PreparingClient#answer). */
function giveUp(client: pg.Client, pending: Pending): void {
  const fail = pending.reject
  pending.resolve = pending.reject = undefined
  fail?.(new Error('Query read timeout'))
  ;(client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
}

/**
 * A pg client that sends named statements by name (see the top), and prepares statements for scripts;
 * with the pool option `prepareStatements: false`, neither. It also keeps the pool's `query_timeout`
 * itself rather than giving it to node-pg (#answer).
 */
export class PreparingClient extends pg.Client {
  readonly #prepares: boolean
  /** How long a query may go unanswered before its caller hears "Query read timeout" (#answer). */
  readonly #timeoutMs: number | undefined
  /** Bumped when a plan changed: every name of this connection is prepared again under a new suffix. */
  #generation = 0
  readonly #prepared = new Set<string>()

  constructor(config?: pg.ClientConfig) {
    const { query_timeout: timeoutMs, ...rest } = config ?? {}
    super(rest)
    this.#prepares = (config as { prepareStatements?: boolean } | undefined)?.prepareStatements !== false
    this.#timeoutMs = timeoutMs || undefined
  }

  // The promise forms (Kysely's query(text, values), a script's query(text)) are answered by #answer, by
  // name where the text has one; the callback and Query-object forms go to node-pg unchanged.
  override query(...args: unknown[]): never {
    const [config, values, callback] = args
    const promised = callback === undefined && (values === undefined || Array.isArray(values))
      && (typeof config === 'string' || (typeof config === 'object' && config !== null && typeof (config as { submit?: unknown }).submit !== 'function'))
    if (!promised) return (super.query as (...a: unknown[]) => never)(...args)
    const name = this.#prepares && typeof config === 'string' && values !== undefined ? statementName(config) : undefined
    return (name === undefined ? this.#answer(config as string | pg.QueryConfig, values as unknown[] | undefined) : this.#named(name, config as string, values as unknown[])) as never
  }

  async #named(name: string, text: string, values: unknown[]): Promise<QueryResult> {
    try {
      return await this.#answer({ name: `${name}_${this.#generation}`, text }, values)
    } catch (error) {
      if (!planChanged(error)) throw error
      this.forgetPlans()
      // node-pg tracks the status ReadyForQuery reports: 'I' is outside a transaction.
      if ((this as unknown as { getTransactionStatus(): string | null }).getTransactionStatus() !== 'I') throw error
      return this.#answer({ name: `${name}_${this.#generation}`, text }, values)
    }
  }

  /**
   * node-pg's callback form in a promise of ours, with our own read timeout. node-pg's promise form and its
   * `query_timeout` each made V8 move every row of a PostgreSQL GET to the old generation (160-300 KB a
   * scavenge, a mark-compact every second or so; docs/performance.md, twenty-second pass); this does not. A query unanswered after `query_timeout` fails with "Query read timeout"
   * (db/errors.ts: the database is unavailable), as node-pg's did, and the connection is closed: what was
   * queued behind it fails too rather than running later, and the pool replaces it. Kysely adds the
   * caller's stack to an error (extendStackTrace), as node-pg's promise did.
   */
  #answer(config: string | pg.QueryConfig, values: unknown[] | undefined): Promise<QueryResult> {
    // Rows come as arrays and are made objects by objectRows (pg-rows.ts), unless the caller chose a row mode.
    const ours = typeof config === 'string' || (config as { rowMode?: string }).rowMode === undefined
    const sent = typeof config === 'string' ? { text: config, rowMode: 'array' } : ours ? { ...config, rowMode: 'array' } : config
    return new Promise((resolve, reject) => {
      const pending: Pending = { resolve, reject }
      const timer = this.#timeoutMs === undefined ? undefined : setTimeout(giveUp, this.#timeoutMs, this, pending)
      // node-pg's typings do not list every form its implementation takes.
      ;(super.query as (c: typeof sent, v: typeof values, cb: (error: Error | null, result: QueryResult | QueryResult[]) => void) => void)(sent, values, (error, result) => {
        clearTimeout(timer)
        const { resolve: answer, reject: fail } = pending
        pending.resolve = pending.reject = undefined
        // Given up on already: its caller has had its error.
        if (fail === undefined) return
        if (error) return fail(error)
        // A script of several statements has a result for each.
        if (ours) {
          if (Array.isArray(result)) result.forEach(objectRows)
          else objectRows(result)
        }
        answer!(result as QueryResult)
      })
    })
  }

  /**
   * The name under which `sql` is prepared on this connection for SQL `EXECUTE`, preparing it first if it
   * is not yet; undefined when prepared statements are off, or the process has no room for another name.
   */
  async prepareOnce(sql: string): Promise<string | undefined> {
    const base = this.#prepares ? nameStatement(sql) : undefined
    if (base === undefined) return undefined
    const name = `${base}_${this.#generation}s`
    if (!this.#prepared.has(name)) {
      await this.#answer(`prepare ${name} as ${sql}`, undefined)
      this.#prepared.add(name)
    }
    return name
  }

  /** After planChanged: every statement of this connection is prepared again, under new names, before its next run. */
  forgetPlans(): void {
    this.#generation++
    this.#prepared.clear()
  }
}
