/**
 * Database errors recognised in one place for both dialects (SQLSTATE for PostgreSQL,
 * result codes for SQLite), so services never inspect driver errors themselves.
 */
interface DriverError {
  code?: unknown
}

function codeOf(error: unknown): string {
  return typeof error === 'object' && error !== null ? String((error as DriverError).code ?? '') : ''
}

export function isUniqueViolation(error: unknown): boolean {
  const code = codeOf(error)
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

/**
 * PostgreSQL answered with an error of its own (an SQLSTATE, with a severity). An ERROR rolled back the
 * statement and its transaction, and the connection still works; a FATAL (an outage's codes, mostly)
 * ends the session. An error without an SQLSTATE is the client's (the connection failed, an answer
 * could not be read), whatever the server did. The severity is in the server's language, so its word
 * is not read.
 */
export function isServerError(error: unknown): boolean {
  return /^[0-9A-Z]{5}$/.test(codeOf(error)) && (error as { severity?: unknown }).severity !== undefined
}

/** The network's words for a server out of reach now: refused, reset, unreachable, a name not resolving. */
const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE',
  'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN',
])

/**
 * pg's own words when a connection is gone or never came: the query, or the rollback after it, cannot
 * run. `timeout expired` (the whole message) is a new connection's connect timeout, where the server took
 * the TCP connection and never answered (a frozen or partitioned host).
 */
const CONNECTION_LOST = /Connection terminated|timeout exceeded when trying to connect|^timeout expired$|Query read timeout|not queryable|server closed the connection unexpectedly/i

/** The database cannot serve right now (down, busy, full); the client may retry later. */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (depth < 3 && error instanceof Error && error.cause !== undefined && isDatabaseUnavailable(error.cause, depth + 1)) return true
  const code = codeOf(error)
  if (UNAVAILABLE_NODE_CODES.has(code)) return true
  // 08xxx connection exceptions, 53xxx insufficient resources, 57P0x shutdown / cannot connect now.
  if (/^(08|53)/.test(code) || /^57P0/.test(code)) return true
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_FULL' || code === 'SQLITE_LOCKED') return true
  return CONNECTION_LOST.test(error instanceof Error ? error.message : '')
}

const SQLITE_TRANSACTION_FATAL = /^SQLITE_(FULL|IOERR|NOMEM|BUSY)/

/**
 * An SQLite error that ends the whole transaction, or calls for ending it (SQLite's advice for a full
 * disk, an I/O error, no memory, a lock it could not get), rather than just the statement.
 */
export function isTransactionFatalSqliteError(error: unknown): boolean {
  return SQLITE_TRANSACTION_FATAL.test(codeOf(error))
}
