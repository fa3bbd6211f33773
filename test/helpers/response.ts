import type http from 'node:http'

/**
 * The one shape of an HTTP answer in the tests, however it was obtained: app.inject (test/helpers/app.ts),
 * fetch against a server process (test/helpers/processes.ts), a request held open on a server
 * (test/helpers/load.ts), or bytes read off a raw socket (test/helpers/raw-http.ts).
 */
export interface Response {
  status: number
  /** Lower-case header names. */
  headers: Record<string, string | string[] | number | undefined>
  /** Parsed JSON body, or undefined when there is none or it is not JSON. */
  body: any
  /** The body exactly as sent. */
  raw: string
}

/** A response body as JSON, or undefined when it is empty or not JSON. */
export function parseBody(raw: string): any {
  try {
    return raw === '' ? undefined : JSON.parse(raw)
  } catch {
    return undefined
  }
}

/** From what app.inject resolves with. */
export function toResponse(res: { statusCode: number, headers: Response['headers'], payload: string }): Response {
  return { status: res.statusCode, headers: res.headers, body: parseBody(res.payload), raw: res.payload }
}

/** From a fetch answer, once its body is read. */
export function fromFetch(res: globalThis.Response, raw: string): Response {
  return { status: res.status, headers: Object.fromEntries(res.headers), body: parseBody(raw), raw }
}

/** From a node:http answer, once its body is read. */
export function fromIncoming(res: http.IncomingMessage, raw: string): Response {
  return { status: res.statusCode ?? 0, headers: res.headers, body: parseBody(raw), raw }
}

/** One header as text: undefined when absent, values of a repeated header joined with ", ". */
export function header(res: Pick<Response, 'headers'>, name: string): string | undefined {
  const value = res.headers[name.toLowerCase()]
  if (value === undefined) return undefined
  return Array.isArray(value) ? value.join(', ') : String(value)
}
