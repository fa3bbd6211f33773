import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

/**
 * A webhook receiver as an integrator would run one: a real HTTP server on 127.0.0.1 that checks
 * every delivery's Standard Webhooks signature with the `standardwebhooks` package when it arrives,
 * and records what came. Tests choose each answer.
 */

export interface Delivery {
  /** The request's headers, lower-case names, as the receiver got them. */
  headers: Record<string, string>
  /** The body exactly as sent. */
  body: string
  method: string
  path: string
  /** `new Webhook(secret).verify(body, headers)` succeeded when the delivery arrived. */
  verified: boolean
  /** Why verification failed, when it did. */
  verifyError: string | null
  /** The answer the receiver gave. */
  answered: number | 'hung'
}

/** What to answer: a status (and headers), or 'hang' to never answer. */
export type Answer = { status: number, headers?: Record<string, string> } | 'hang'
/** Picks the answer to the n-th delivery (0-based) this receiver got. */
export type Responder = (delivery: Omit<Delivery, 'answered'>, n: number) => Answer

export interface Receiver {
  port: number
  /** http://127.0.0.1:<port>, for endpoints on paths of their own. */
  origin: string
  /** http://127.0.0.1:<port>/hooks */
  url: string
  deliveries: Delivery[]
  /** The endpoint's secret: set it once the endpoint is created, before anything is delivered. */
  secret: string | undefined
  respond: Responder
  /** The webhook-id of every delivery, in arrival order. */
  ids(): string[]
  close(): Promise<void>
}

/** A port that was free a moment ago: nothing listens on it now. */
export async function freePort(): Promise<number> {
  const server = http.createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Verifies as an integrator would; throws when the signature does not match. */
export function verifyDelivery(secret: string, body: string, headers: Record<string, string>): unknown {
  return new Webhook(secret).verify(body, headers)
}

/** `body` with the byte at `index` changed (default: the middle one). */
export function tamper(body: string, index = Math.floor(body.length / 2)): string {
  const bytes = Buffer.from(body)
  bytes[index] = bytes[index]! ^ 0x01
  return bytes.toString()
}

/** Starts a receiver on 127.0.0.1 (`port` 0 picks a free one). Answers 200 unless told otherwise. */
export async function startReceiver(options: { port?: number, respond?: Responder, secret?: string } = {}): Promise<Receiver> {
  const deliveries: Delivery[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value
      }
      let verified = false
      let verifyError: string | null = 'no secret set on the receiver'
      if (receiver.secret !== undefined) {
        try {
          verifyDelivery(receiver.secret, body, headers)
          verified = true
          verifyError = null
        } catch (error) {
          verifyError = (error as Error).message
        }
      }
      const seen = { headers, body, method: req.method ?? '', path: req.url ?? '', verified, verifyError }
      const answer = receiver.respond(seen, deliveries.length)
      deliveries.push({ ...seen, answered: answer === 'hang' ? 'hung' : answer.status })
      if (answer === 'hang') return
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers })
      res.end('ok')
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const receiver: Receiver = {
    port,
    origin: `http://127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}/hooks`,
    deliveries,
    secret: options.secret,
    respond: options.respond ?? (() => ({ status: 200 })),
    ids: () => deliveries.map((d) => d.headers['webhook-id'] ?? ''),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
  return receiver
}
