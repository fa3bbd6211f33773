import { randomUUID } from 'node:crypto'
import autocannon, { type Request } from 'autocannon'

export interface LoadResult {
  requestsPerSecond: number
  p50: number
  p99: number
  errors: number
  requests: number
}

export interface LoadOptions {
  url: string
  path: string
  method?: 'GET' | 'POST'
  key?: string
  body?: () => Record<string, unknown>
  connections: number
  durationSeconds: number
  /** Seconds of the same load first, not measured, so the JIT and caches are warm. */
  warmupSeconds?: number
}

/** Runs autocannon against one route; every non-2xx answer or socket error counts as an error. */
export async function load(options: LoadOptions): Promise<LoadResult> {
  if (options.warmupSeconds) await measure({ ...options, durationSeconds: options.warmupSeconds })
  return measure(options)
}

async function measure(options: LoadOptions): Promise<LoadResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (options.key) headers.authorization = `Bearer ${options.key}`
  const makeBody = options.body
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationSeconds,
    requests: [{
      method: options.method ?? 'GET',
      path: options.path,
      headers,
      ...(makeBody ? { setupRequest: (request: Request): Request => ({ ...request, body: JSON.stringify(makeBody()) }) } : {}),
    }],
  })
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    requests: result.requests.total,
  }
}

export const newPaymentBody = (mandateId: string) => () => ({ mandate_id: mandateId, amount: 1, idempotency_key: randomUUID() })
