/**
 * What the commands that talk to a running server (listen, events tail, trigger, deliveries) share:
 * where the server is, the key, and JSON requests that turn the contract's error envelope into a
 * message.
 */

/** A mistake in the command line: printed with the usage, exit 2. */
export class CommandUsageError extends Error {}

/** The API answered an error: its envelope's message and code. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly retryAfterSeconds: number | undefined) {
    super(message)
  }
}

export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000'

export interface ApiTarget {
  baseUrl: string
  apiKey: string
}

/** --api-key or WISHPAY_API_KEY, --base-url or WISHPAY_BASE_URL. */
export function targetOf(values: { 'api-key'?: string | undefined, 'base-url'?: string | undefined }, env: NodeJS.ProcessEnv = process.env): ApiTarget {
  const apiKey = values['api-key'] ?? env.WISHPAY_API_KEY
  if (!apiKey) throw new CommandUsageError('An API key is needed: --api-key KEY or WISHPAY_API_KEY')
  const baseUrl = (values['base-url'] ?? env.WISHPAY_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, '')
  if (!URL.canParse(baseUrl)) throw new CommandUsageError(`--base-url is not a URL: ${baseUrl}`)
  return { baseUrl, apiKey }
}

/** The options every such command takes, for node:util parseArgs. */
export const TARGET_OPTIONS = {
  'api-key': { type: 'string' },
  'base-url': { type: 'string' },
} as const

/** The error an answer carries, from its envelope when it has one. */
export async function apiErrorOf(res: Response): Promise<ApiError> {
  const text = await res.text()
  const retryAfter = Number(res.headers.get('retry-after') ?? Number.NaN)
  try {
    const { error } = JSON.parse(text) as { error: { code: string, message: string } }
    return new ApiError(res.status, error.code, error.message, Number.isFinite(retryAfter) ? retryAfter : undefined)
  } catch {
    return new ApiError(res.status, 'unexpected_response', `HTTP ${res.status}: ${text.slice(0, 200)}`, undefined)
  }
}

/** One JSON request; resolves with the body's `data`, or throws ApiError. */
export async function apiRequest<T = Record<string, unknown>>(target: ApiTarget, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(`${target.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${target.apiKey}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  })
  if (!res.ok) throw await apiErrorOf(res)
  if (res.status === 204) return undefined as T
  return ((await res.json()) as { data: T }).data
}
