import pino, { type Logger } from 'pino'
import type { Config } from './config.js'

/**
 * Paths that may hold secrets anywhere in a log object. Nothing logs them on purpose; this is the
 * net under that rule.
 */
export const REDACT_PATHS = [
  'req.headers.authorization', 'headers.authorization', 'authorization',
  'key', 'key_hash', 'secret', '*.key', '*.key_hash', '*.secret', '*.authorization',
]

/** JSON lines, or pino-pretty's readable lines when stdout is a terminal. */
export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { service: 'wishpay' },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(process.stdout.isTTY ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  })
}
