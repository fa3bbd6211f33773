/**
 * The process's names for the SQL texts it prepares on PostgreSQL (prepared-statements.ts), apart from
 * the client that prepares them: query templates (query-template.ts) name their statements on either
 * store, and a SQLite server never loads node-pg.
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

/** The name `sql` was given, if it was: a statement sent by name is sent prepared. */
export function statementName(sql: string): string | undefined {
  return names.get(sql)
}

/** The error of a prepared statement whose result no longer has the columns it had when prepared. */
export function planChanged(error: unknown): boolean {
  return (error as { code?: unknown })?.code === '0A000' && /cached plan must not change result type/.test(String((error as Error).message))
}
