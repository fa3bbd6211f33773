/**
 * The API client: the same origin, the key from this tab's sessionStorage (never localStorage or a
 * cookie: it is gone when the tab closes), and the API's own error message on failure.
 */
const KEY = 'wishpay.apiKey'

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn: (key: string): void => sessionStorage.setItem(KEY, key),
  signOut: (): void => sessionStorage.removeItem(KEY),
}

/** An error answered by the API (its envelope), or a network failure (status 0). */
export class ApiError extends Error {
  constructor(message: string, readonly status: number, readonly code: string, readonly requestId?: string) {
    super(message)
  }
}

export interface ListPage<T> {
  data: T[]
  meta: { total: number, limit: number, offset: number }
}

type Query = Record<string, string | number | undefined>

/** `path` with the query's non-empty members. */
export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, String(value))
  const qs = params.toString()
  return qs ? `${path}?${qs}` : path
}

export async function request<T>(method: 'GET' | 'POST', path: string, options: { key?: string, body?: unknown, idempotencyKey?: string } = {}): Promise<T> {
  const headers: Record<string, string> = { Authorization: `Bearer ${options.key ?? session.key() ?? ''}` }
  if (options.body !== undefined) headers['Content-Type'] = 'application/json'
  if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey
  let res: Response
  try {
    res = await fetch(path, { method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) })
  } catch {
    throw new ApiError('The server could not be reached.', 0, 'network_error')
  }
  const body = await res.json().catch(() => null) as { data?: T, error?: { message: string, code: string, request_id?: string } } | null
  if (!res.ok || body === null) {
    const error = body?.error
    throw new ApiError(error?.message ?? `The server answered ${res.status}.`, res.status, error?.code ?? 'unexpected_response', error?.request_id)
  }
  return body as T
}

export const get = <T>(path: string, query?: Query) => request<{ data: T }>('GET', withQuery(path, query)).then((b) => b.data)
export const list = <T>(path: string, query?: Query) => request<ListPage<T>>('GET', withQuery(path, query))
/** A write the user confirmed. Payment operations need an Idempotency-Key: each confirmed action has its own. */
export const post = <T>(path: string, body: unknown = {}) =>
  request<{ data: T }>('POST', path, { body, idempotencyKey: crypto.randomUUID() }).then((b) => b.data)
