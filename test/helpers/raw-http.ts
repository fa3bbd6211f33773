import net from 'node:net'
import { parseBody, type Response } from './response.js'

/** Everything a server wrote back on one raw connection, and how the connection ended. */
export interface RawExchange {
  /** The bytes received, as latin1 text (the answers are ASCII headers and JSON). */
  received: string
  /** The connection ended (FIN or reset) before the test gave up on it. */
  closed: boolean
  /** An error the client socket saw (a reset while the request was still being written, say). */
  error: string | undefined
}

/**
 * Writes `request` byte for byte on a new TCP connection and collects what comes back until the
 * server closes the connection (or `timeoutMs` passes: `closed` is then false).
 */
export function rawExchange(port: number, request: string | Buffer, timeoutMs = 10_000): Promise<RawExchange> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let error: string | undefined
    const socket = net.connect({ port, host: '127.0.0.1' }, () => { socket.write(request) })
    const finish = (closed: boolean) => {
      clearTimeout(timer)
      resolve({ received: Buffer.concat(chunks).toString('latin1'), closed, error })
    }
    const timer = setTimeout(() => { socket.destroy(); finish(false) }, timeoutMs)
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', (e) => { error = e.message })
    socket.on('close', () => finish(true))
  })
}

/**
 * Splits received bytes into HTTP/1.1 responses (each framed by its Content-Length), in the shape
 * the in-process tests use: lower-case header names, parsed JSON body. `headOnly` marks responses
 * to HEAD, which carry a Content-Length but no body.
 */
export function parseResponses(received: string, headOnly: boolean[] = []): Response[] {
  const responses: Response[] = []
  let rest = received
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) throw new Error(`incomplete response head: ${JSON.stringify(rest.slice(0, 200))}`)
    const [statusLine, ...headerLines] = rest.slice(0, end).split('\r\n')
    const match = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine!)
    if (!match) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(statusLine)}`)
    const headers: Response['headers'] = {}
    for (const line of headerLines) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    const length = headOnly[responses.length] ? 0 : Number(headers['content-length'] ?? 0)
    const bodyBytes = Buffer.from(rest.slice(end + 4), 'latin1').subarray(0, length)
    if (bodyBytes.length < length) throw new Error(`body shorter than Content-Length ${length}`)
    const raw = bodyBytes.toString('utf8')
    responses.push({ status: Number(match[1]), headers, body: parseBody(raw), raw })
    rest = Buffer.from(rest.slice(end + 4), 'latin1').subarray(length).toString('latin1')
  }
  return responses
}
