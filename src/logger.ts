import cluster from 'node:cluster'
import pino, { type Logger, type LoggerOptions } from 'pino'
import type { Config } from './config.js'

/**
 * Paths that may hold secrets anywhere in a log object. Nothing logs them on purpose; this is the
 * net under that rule.
 */
export const REDACT_PATHS = [
  'req.headers.authorization', 'headers.authorization', 'authorization',
  'req.headers.cookie', 'headers.cookie', '*.cookie',
  'key', 'key_hash', 'secret', '*.key', '*.key_hash', '*.secret', '*.authorization',
  'rawPacket', '*.rawPacket',
]

/**
 * Members of an error that hold the bytes a client sent: Node's HTTP parser puts the whole raw
 * request (headers included, so `Authorization: Bearer sk_…`) in `rawPacket`.
 */
const BYTE_MEMBERS = new Set(['rawPacket', 'data', 'buffer', 'body', 'headers', 'config', 'request', 'response'])

const isBytes = (value: unknown): boolean =>
  Buffer.isBuffer(value) || ArrayBuffer.isView(value) || value instanceof ArrayBuffer ||
  (typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'Buffer' && Array.isArray((value as { data?: unknown }).data))

/**
 * PostgreSQL's `detail` holds the values of a violated key (`Key (key_hash)=(…) already exists.`) or a
 * whole failing row (`Failing row contains (…).`): the values go, the column names stay.
 */
const scrubDetail = (detail: string): string =>
  detail.replace(/=\(.*\)/s, '=([redacted])').replace(/contains \(.*\)/s, 'contains ([redacted])')

/**
 * pino's error serializer, minus everything that can carry request bytes or stored secrets: raw
 * packets and any other binary member, request/response objects an HTTP client may attach, and the
 * values in a database error's detail. Nested errors (aggregated, in arrays) go through the same
 * filter; nesting is cut at a few levels.
 */
export function serializeError(error: unknown): unknown {
  return sanitize(error, 0)
}

const MAX_DEPTH = 5

function sanitize(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (isBytes(value)) return '[redacted bytes]'
  if (depth > MAX_DEPTH) return '[truncated]'
  if (Array.isArray(value)) return value.map((item) => sanitize(item, depth + 1))
  const source = value instanceof Error ? pino.stdSerializers.err(value) as unknown as Record<string, unknown> : value as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const [name, member] of Object.entries(source)) {
    if (isBytes(member)) continue
    if (BYTE_MEMBERS.has(name) && typeof member === 'object' && member !== null) continue
    out[name] = name === 'detail' && typeof member === 'string' ? scrubDetail(member) : sanitize(member, depth + 1)
  }
  return out
}

/**
 * The last net, on the finished line: anything shaped like one of our secrets (API keys, webhook
 * secrets) or like a serialized Buffer is replaced before the line is written. The test is one
 * regular expression over a short line; lines without a match are written as they are.
 */
const SECRET_SHAPES = /\b(?:sk|rk|ak)_[0-9A-Za-z]{16,}|\bwhsec_[0-9A-Za-z+/=]{16,}|\{"type":"Buffer","data":\[[0-9,]*\]\}/g

export function scrubLine(line: string): string {
  SECRET_SHAPES.lastIndex = 0
  if (!SECRET_SHAPES.test(line)) return line
  return line.replace(SECRET_SHAPES, (match) => (match.startsWith('{') ? '"[redacted bytes]"' : '[redacted]'))
}

let timeMs = Number.NaN
let timeField = ''

/**
 * pino's isoTime, made once a millisecond: under load a server writes several lines a millisecond, and
 * a Date and its toISOString each was 2 % of a GET's CPU (docs/performance.md, fifth pass). Same text.
 */
export function isoTime(): string {
  const now = Date.now()
  if (now !== timeMs) {
    timeMs = now
    timeField = `,"time":"${new Date(now).toISOString()}"`
  }
  return timeField
}

/** The options every Wishpay logger is built with; tests build loggers on their own streams with them. */
export function loggerOptions(config: Pick<Config, 'logLevel'>): LoggerOptions {
  return {
    level: config.logLevel,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: serializeError, error: serializeError },
    hooks: { streamWrite: scrubLine },
    base: { service: 'wishpay' },
    timestamp: isoTime,
  }
}

/**
 * JSON lines, or pino-pretty's readable lines when stdout is a terminal.
 *
 * JSON lines go to file descriptor 1 in one synchronous write() a turn of the event loop: the lines a
 * turn logs are held (sonic-boom's minLength) and written together when the turn's I/O callbacks are done
 * (linesByTurn), or sooner once they fill a write. The asynchronous destination this replaces wrote
 * through libuv's thread pool: each write cost a thread hand-over and its wake-ups (about one futex call
 * per request under load, 7-10 % of a GET's CPU: docs/performance.md, fifth pass), and lines it could not
 * write yet piled up in memory. Written synchronously, as pino writes by default, a log reader slower than
 * the server slows the server rather than growing its heap. An idle server's lines (the listening line
 * that tests and operators wait for) go at the end of their turn. What is held is written on process
 * exit, which covers a normal exit, the SIGTERM drain (server.ts ends it with process.exit) and a fatal
 * error (an uncaught exception exits through the same 'exit' event).
 */
export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  if (process.stdout.isTTY) {
    return pino({ ...loggerOptions(config), transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } })
  }
  const maxWrite = logWriteSize(cluster.isWorker)
  const destination = pino.destination({ dest: 1, sync: true, minLength: Math.min(64 * 1024, maxWrite - 1), maxWrite, contentMode: 'buffer' })
  const lines = linesByTurn(destination)
  // pino flushes only asynchronous destinations on exit by itself.
  process.once('exit', lines.flushSync)
  return pino(loggerOptions(config), lines)
}

type Destination = ReturnType<typeof pino.destination>

/**
 * The destination in sonic-boom's buffer mode, each line handed over as a Buffer, and what it holds
 * written at the end of the turn that logged it. Its string mode runs Buffer.byteLength over the queued
 * text on every line, which flattens the growing string each time (about 7 KB copied per request line
 * under load, issue 17); buffer mode keeps running lengths. A failed write is the destination's 'error',
 * as it was when sonic-boom wrote by itself.
 */
function linesByTurn(destination: Destination) {
  let pending = false
  const writeHeld = () => {
    pending = false
    try {
      destination.flushSync()
    } catch (error) {
      destination.emit('error', error)
    }
  }
  return {
    write: (line: string) => {
      destination.write(Buffer.from(line) as unknown as string)
      if (!pending) {
        pending = true
        setImmediate(writeHeld)
      }
    },
    flush: (callback?: (error?: Error) => void) => { destination.flush(callback) },
    flushSync: () => { destination.flushSync() },
  }
}

/**
 * The most one write(2) of log lines carries; it always carries whole lines. Alone on stdout the process
 * writes up to 1 MiB at once (a burst of lines goes in one write, not one per PIPE_BUF: issue 17). A
 * worker of WORKERS=N shares stdout with its siblings, so it keeps to PIPE_BUF (4 KB), which a pipe takes
 * atomically: their lines never interleave mid-line.
 */
export function logWriteSize(sharedStdout: boolean): number {
  return sharedStdout ? 4096 : 1024 * 1024
}
