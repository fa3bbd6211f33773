import type { Bindings, ChildLoggerOptions, Logger } from 'pino'

type Method = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * A request's logger (Fastify's `request.log`), made on first use. pino builds a child's bindings and
 * redaction when it is made, about 2.6 KB and a redaction pass per request, while most requests log only
 * their request line, which request-context.ts writes to the parent's stream (`writeRequestLine`). Lines
 * logged through this one are the same as through the child it stands for.
 */
export class LazyRequestLogger {
  #child: Logger | undefined

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get #logger(): Logger {
    return this.#child ??= this.parent.child(this.bindings, this.options)
  }

  get level(): string { return this.#logger.level }
  set level(level: string) { this.#logger.level = level }
  /** A route with a log level of its own has a child that decides; otherwise the parent's level holds. */
  isLevelEnabled(level: string): boolean { return (this.options.level === undefined ? this.parent : this.#logger).isLevelEnabled(level) }
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger { return this.#logger.child(bindings, options) }
  fatal(...args: Parameters<Logger[Method]>): void { this.#logger.fatal(...args) }
  error(...args: Parameters<Logger[Method]>): void { this.#logger.error(...args) }
  warn(...args: Parameters<Logger[Method]>): void { this.#logger.warn(...args) }
  info(...args: Parameters<Logger[Method]>): void { this.#logger.info(...args) }
  debug(...args: Parameters<Logger[Method]>): void { this.#logger.debug(...args) }
  trace(...args: Parameters<Logger[Method]>): void { this.#logger.trace(...args) }
  silent(): void {}
}
