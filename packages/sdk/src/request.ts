import { errorFromResponse } from './errors.js'

/** Options of one call. */
export interface RequestOptions {
  /**
   * The Idempotency-Key of a POST. Without one the SDK makes a random one; either way the same key
   * is sent on every retry. Pass your own (an order id, say) to make retries across restarts safe.
   */
  idempotencyKey?: string
  /** Aborts the call, retries included. */
  signal?: AbortSignal
}

/** The body of a 2xx answer; a typed WishpayError for anything else. */
export async function send<T>(pending: Promise<{ data?: T, error?: unknown, response: Response }>): Promise<T> {
  const { data, error, response } = await pending
  if (!response.ok) throw errorFromResponse(response, error)
  return data as T
}

/** The Idempotency-Key header of a POST: the caller's key, the body's `idempotency_key`, or a new one. */
export function idempotencyHeader(options: RequestOptions | undefined, body?: object): { 'Idempotency-Key': string } {
  const inBody = (body as { idempotency_key?: unknown } | undefined)?.idempotency_key
  const key = options?.idempotencyKey ?? (typeof inBody === 'string' ? inBody : globalThis.crypto.randomUUID())
  return { 'Idempotency-Key': key }
}

/** The fetch options of a call (only its signal, when there is one). */
export function fetchInit(options: RequestOptions | undefined): { signal?: AbortSignal } {
  return options?.signal ? { signal: options.signal } : {}
}
