import pg from 'pg'

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

/** Names are per SQL text; templates are few, the bound only guards the connections' memory against a bug. */
const MAX_NAMES = 2000
const names = new Map<string, string>()

/** Gives `sql` a name (if the process has room for one more); statements without a name run unnamed. */
export function nameStatement(sql: string): string | undefined {
  let name = names.get(sql)
  if (name === undefined && names.size < MAX_NAMES) names.set(sql, name = `wishpay_${names.size + 1}`)
  return name
}

/** The error of a prepared statement whose result no longer has the columns it had when prepared. */
export function planChanged(error: unknown): boolean {
  return (error as { code?: unknown })?.code === '0A000' && /cached plan must not change result type/.test(String((error as Error).message))
}

type QueryResult = pg.QueryResult<Record<string, unknown>>

/**
 * A pg client that sends named statements by name (see the top), and prepares statements for scripts;
 * with the pool option `prepareStatements: false`, neither.
 */
export class PreparingClient extends pg.Client {
  readonly #prepares: boolean
  /** Bumped when a plan changed: every name of this connection is prepared again under a new suffix. */
  #generation = 0
  readonly #prepared = new Set<string>()

  constructor(config?: pg.ClientConfig) {
    super(config)
    this.#prepares = (config as { prepareStatements?: boolean } | undefined)?.prepareStatements !== false
  }

  // Kysely calls query(text, values) and awaits the promise; every other form goes to node-pg unchanged.
  override query(...args: unknown[]): never {
    const [text, values, callback] = args
    const name = this.#prepares && typeof text === 'string' && Array.isArray(values) && callback === undefined ? names.get(text) : undefined
    if (name === undefined) return (super.query as (...a: unknown[]) => never)(...args)
    return this.#named(name, text as string, values as unknown[]) as never
  }

  async #named(name: string, text: string, values: unknown[]): Promise<QueryResult> {
    try {
      return await super.query({ name: `${name}_${this.#generation}`, text, values })
    } catch (error) {
      if (!planChanged(error)) throw error
      this.forgetPlans()
      // node-pg tracks the status ReadyForQuery reports: 'I' is outside a transaction.
      if ((this as unknown as { getTransactionStatus(): string | null }).getTransactionStatus() !== 'I') throw error
      return super.query({ name: `${name}_${this.#generation}`, text, values })
    }
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
      await super.query(`prepare ${name} as ${sql}`)
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
