import http from 'node:http'
import { fromIncoming, type Response } from './response.js'

/**
 * Load for the process tests (test/reliability): a pool of workers that keeps a number of requests
 * in flight, and requests that a test holds open on the server at a known point.
 */

/**
 * Runs `concurrency` workers at once; each calls `work` again and again until it returns false.
 * Resolves when every worker has stopped; a worker that throws stops them all and rejects.
 */
export async function runWorkers(concurrency: number, work: (worker: number) => Promise<boolean>): Promise<void> {
  let failed = false
  const worker = async (n: number) => {
    try {
      while (!failed && await work(n)) { /* next */ }
    } catch (error) {
      failed = true
      throw error
    }
  }
  await Promise.all(Array.from({ length: concurrency }, (_, n) => worker(n)))
}

/** What a held request ended with: an HTTP answer, or the error that ended its connection. */
export type HeldOutcome =
  | ({ kind: 'answer' } & Response)
  | { kind: 'error', error: Error }

export interface HeldRequest {
  /**
   * Resolves once the server has read the request's headers and handed it to the application: it sent
   * `100 Continue` (Node answers `Expect: 100-continue` itself right before it emits 'request').
   * From then on the request is in flight on the server.
   */
  received: Promise<void>
  /** Sends the body (if any was held back) and ends the request. */
  release(): void
  /** The answer, or the error that ended the connection; never rejects. */
  outcome: Promise<HeldOutcome>
}

export interface HeldRequestOptions {
  /** Send the body at once instead of waiting for release(). */
  sendBodyAtOnce?: boolean
  /** An http.Agent for keep-alive connections; default: a connection of its own, closed after the answer. */
  agent?: http.Agent
}

/**
 * An authenticated JSON request sent with `Expect: 100-continue`. Its headers go out at once; its body
 * (for a request that has one) waits for release(), so the request stays in flight on the server
 * until the test lets it finish.
 */
export function heldRequest(baseUrl: string, key: string, method: string, path: string, body?: unknown, options: HeldRequestOptions = {}): HeldRequest {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, expect: '100-continue' }
  if (payload) {
    headers['content-type'] = 'application/json'
    headers['content-length'] = String(payload.length)
  }
  const req = http.request(`${baseUrl}${path}`, { method, headers, agent: options.agent ?? false })
  let markReceived!: () => void
  let failReceived!: (error: Error) => void
  const received = new Promise<void>((resolve, reject) => { markReceived = resolve; failReceived = reject })
  // A request that is never received must not leave an unhandled rejection behind.
  received.catch(() => {})
  let released = false
  let continued = false
  const send = () => {
    if (req.writableEnded) return
    if (payload) req.end(payload)
    else req.end()
  }
  const outcome = new Promise<HeldOutcome>((resolve) => {
    req.on('continue', () => {
      continued = true
      markReceived()
      if (released || options.sendBodyAtOnce) send()
    })
    req.on('response', (res) => {
      // An answer without 100 Continue first (the server refused the request before reading it).
      if (!continued) failReceived(new Error(`answered ${res.statusCode} before 100 Continue`))
      let raw = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { raw += chunk })
      res.on('end', () => {
        resolve({ kind: 'answer', ...fromIncoming(res, raw) })
      })
      res.on('error', (error) => resolve({ kind: 'error', error }))
    })
    req.on('error', (error) => {
      failReceived(error)
      resolve({ kind: 'error', error })
    })
  })
  // Headers only: the body waits for 100 Continue and release().
  req.flushHeaders()
  return {
    received,
    release() {
      released = true
      if (continued) send()
    },
    outcome,
  }
}

/**
 * A GET on a new connection, bounded by `timeoutMs`: the status it was answered with, or the error code
 * of a connection that was refused or reset, or 'timeout' when nothing happened in time.
 */
export function probeNewConnection(baseUrl: string, path: string, timeoutMs: number): Promise<{ status: number } | { error: string }> {
  return new Promise((resolve) => {
    const req = http.get(`${baseUrl}${path}`, { agent: false, timeout: timeoutMs }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }))
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }))
    })
    req.on('timeout', () => {
      req.destroy()
      resolve({ error: 'timeout' })
    })
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }))
  })
}
