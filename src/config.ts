import path from 'node:path'

/** Typed, frozen configuration read once from the environment (contract section 8). */
export interface Config {
  readonly port: number
  readonly host: string
  /** A postgres:// URL, or undefined for the embedded SQLite store. */
  readonly databaseUrl: string | undefined
  /** PostgreSQL: run hot statements as named prepared statements (off behind a transaction-mode pooler). */
  readonly databasePreparedStatements: boolean
  readonly dataDir: string
  readonly redisUrl: string | undefined
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  readonly rateLimitPerSecond: number
  readonly idempotencyTtlSeconds: number
  readonly sandboxSettlementDelayMs: number
  readonly webhookRetryScale: number
  readonly webhookAllowPrivate: boolean
  readonly metricsToken: string | undefined
  /** The key of ACP card fingerprints (HMAC); unset: one the server makes on first use and keeps in the database. */
  readonly cardFingerprintSecret: string | undefined
  readonly defaultProtocol: 'ap2' | 'acp'
  /** How long a stopping server waits for in-flight requests before closing their connections. */
  readonly shutdownTimeoutMs: number
  /** How old an event must be before GET /events/stream sends it (events/stream.ts), and how often a stream looks. */
  readonly eventStreamSettleMs: number
  readonly eventStreamPollMs: number
  /** How many processes `wishpay serve` runs on its one port (node:cluster); 1 serves in this process. */
  readonly workers: number
  readonly production: boolean
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>
type Parser<T> = (raw: string) => T

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

function integer(min: number, max: number): Parser<number> {
  return (raw) => {
    if (!/^\d+$/.test(raw.trim())) throw new Error(`must be an integer between ${min} and ${max}`)
    const value = Number(raw)
    if (value < min || value > max) throw new Error(`must be an integer between ${min} and ${max}`)
    return value
  }
}

function positiveNumber(raw: string): number {
  const value = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(value) || value <= 0) throw new Error('must be a number greater than 0')
  return value
}

function oneOf<T extends string>(values: readonly T[]): Parser<T> {
  return (raw) => {
    const value = raw.trim().toLowerCase() as T
    if (!values.includes(value)) throw new Error(`must be one of ${values.join(', ')}`)
    return value
  }
}

function boolean(raw: string): boolean {
  const value = raw.trim().toLowerCase()
  if (['true', '1', 'yes'].includes(value)) return true
  if (['false', '0', 'no', ''].includes(value)) return false
  throw new Error('must be true or false')
}

function url(protocols: string[]): Parser<string> {
  return (raw) => {
    let parsed: URL
    try {
      parsed = new URL(raw)
    } catch {
      throw new Error(`must be a URL (${protocols.join(' or ')})`)
    }
    if (!protocols.includes(parsed.protocol)) throw new Error(`must be a URL (${protocols.join(' or ')})`)
    return raw
  }
}

function text(raw: string): string {
  return raw.trim()
}

/**
 * Reads and validates the environment. Every bad variable is reported, one line each,
 * in a single ConfigError, so an operator fixes them all in one go.
 */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = []
  function read<T>(name: string, parse: Parser<T>, fallback: T): T {
    const raw = env[name]
    // An empty variable counts as unset, as container tooling often writes `NAME=`.
    if (raw === undefined || raw.trim() === '') return fallback
    try {
      return parse(raw)
    } catch (error) {
      problems.push(`${name} ${(error as Error).message} (got ${JSON.stringify(raw)})`)
      return fallback
    }
  }

  const config: Config = {
    port: read('PORT', integer(0, 65535), 3000),
    host: read('HOST', text, '127.0.0.1'),
    databaseUrl: read<string | undefined>('DATABASE_URL', url(['postgres:', 'postgresql:']), undefined),
    databasePreparedStatements: read('DATABASE_PREPARED_STATEMENTS', boolean, true),
    dataDir: path.resolve(read('DATA_DIR', text, './data')),
    redisUrl: read<string | undefined>('REDIS_URL', url(['redis:', 'rediss:']), undefined),
    logLevel: read('LOG_LEVEL', oneOf(LOG_LEVELS), 'info'),
    rateLimitPerSecond: read('RATE_LIMIT_PER_SECOND', integer(1, 1_000_000), 100),
    idempotencyTtlSeconds: read('IDEMPOTENCY_TTL_SECONDS', integer(1, 31_536_000), 86_400),
    sandboxSettlementDelayMs: read('SANDBOX_SETTLEMENT_DELAY_MS', integer(0, 86_400_000), 2000),
    webhookRetryScale: read('WEBHOOK_RETRY_SCALE', positiveNumber, 1),
    webhookAllowPrivate: read('WEBHOOK_ALLOW_PRIVATE', boolean, false),
    metricsToken: read<string | undefined>('METRICS_TOKEN', text, undefined),
    cardFingerprintSecret: read<string | undefined>('CARD_FINGERPRINT_SECRET', text, undefined),
    defaultProtocol: read('DEFAULT_PROTOCOL', oneOf(['ap2', 'acp'] as const), 'ap2'),
    shutdownTimeoutMs: read('SHUTDOWN_TIMEOUT_MS', integer(0, 600_000), 10_000),
    eventStreamSettleMs: read('EVENT_STREAM_SETTLE_MS', integer(0, 60_000), 2000),
    eventStreamPollMs: read('EVENT_STREAM_POLL_MS', integer(10, 60_000), 500),
    // Each worker opens its own PostgreSQL pool (10 connections): beyond 64 a host runs out of database
    // connections (or cores) long before it gains throughput.
    workers: read('WORKERS', integer(1, 64), 1),
    production: env.NODE_ENV === 'production',
  }
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `Invalid configuration: ${p}`).join('\n'))
  return Object.freeze(config)
}

/**
 * Why this configuration cannot serve with several processes, or undefined when it can. The embedded
 * SQLite store is single-process by design (one connection, group commit in memory); only `serve`
 * refuses it, so that `wishpay keys` and `migrate` work with the same environment.
 */
export function multiProcessProblem(config: Pick<Config, 'workers' | 'databaseUrl'>): string | undefined {
  if (config.workers === 1 || config.databaseUrl) return undefined
  return `Invalid configuration: WORKERS=${config.workers} needs PostgreSQL (DATABASE_URL): the embedded SQLite store ` +
    'serves from one process (one connection, group commit in memory). Unset WORKERS or set DATABASE_URL.'
}
