import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createAccountService } from '../../src/modules/accounts/service.js'
import { systemClock } from '../../src/lib/clock.js'
import { randomBase62 } from '../../src/lib/ids.js'
import { call, killServer, stopServer, waitFor } from '../helpers/processes.js'
import { parseResponses, rawExchange } from '../helpers/raw-http.js'
import { header } from '../helpers/response.js'
import { startReceiver, type Receiver } from '../helpers/receiver.js'
import { startServer, type ServerProcess } from '../helpers/server.js'
import { storeKinds, type TestStore } from '../helpers/stores.js'

/**
 * No secret in any log line, at any level: a real `wishpay serve` at LOG_LEVEL=trace gets normal
 * traffic, webhook deliveries (first refused, then accepted), and hostile requests over raw sockets
 * that make Node's parser fail with the whole raw request — `Authorization: Bearer sk_…` included —
 * in hand. Then every line it wrote is searched for the key and the webhook secret in every form a
 * logger could print them: as text, hashed, base64, hex, and as the decimal bytes of a JSON Buffer.
 */

/** A test card (Luhn-valid), one that fails Luhn, and a CVC unlike any number a log line holds. */
const CARD_NUMBER = '4111111111111111'
const BAD_CARD_NUMBER = '4111111111111112'
const CARD_CVC = '8317'

/** Every printable form of a secret we look for; the names say which form matched. */
function forms(label: string, secret: string, extraBytes: Record<string, Buffer> = {}): Record<string, string> {
  const bytes = Buffer.from(secret, 'utf8')
  const found: Record<string, string> = {
    [`${label}`]: secret,
    [`${label} sha256 hex`]: createHash('sha256').update(secret).digest('hex'),
    [`${label} sha256 base64`]: createHash('sha256').update(secret).digest('base64'),
    [`${label} base64`]: bytes.toString('base64'),
    [`${label} base64url`]: bytes.toString('base64url'),
    [`${label} hex`]: bytes.toString('hex'),
    // A Buffer or byte array as JSON prints it: {"type":"Buffer","data":[115,107,95,...]}.
    [`${label} decimal bytes`]: [...bytes].join(','),
    [`${label} decimal bytes, spaced`]: [...bytes].join(', '),
  }
  for (const [name, extra] of Object.entries(extraBytes)) {
    found[`${label} ${name} hex`] = extra.toString('hex')
    found[`${label} ${name} decimal bytes`] = [...extra].join(',')
  }
  // The random part alone, in case a prefix was cut off.
  const body = secret.slice(secret.indexOf('_') + 1)
  found[`${label} without prefix`] = body
  found[`${label} without prefix, decimal bytes`] = [...Buffer.from(body)].join(',')
  return found
}

/** The requests that make Node's HTTP parser or Fastify's router fail, each carrying the key. */
function hostileRequests(key: string): Record<string, string> {
  const auth = `Authorization: Bearer ${key}\r\n`
  return {
    'headers of 70 KiB': `GET /wishes HTTP/1.1\r\nHost: localhost\r\n${auth}X-Padding: ${'p'.repeat(70 * 1024)}\r\n\r\n`,
    'request line over 16 KiB, key in the query': `GET /wishes?api_key=${key}&pad=${'q'.repeat(17 * 1024)} HTTP/1.1\r\nHost: localhost\r\n${auth}\r\n`,
    'bad Transfer-Encoding': `POST /wishes HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked, identity\r\n\r\n{"query":"${key}"}`,
    'Content-Length with chunked': `POST /wishes HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    'unknown method': `FROB /wishes HTTP/1.1\r\nHost: localhost\r\n${auth}\r\n`,
    'header without a colon after the key': `GET /wishes HTTP/1.1\r\nHost: localhost\r\n${auth}this is not a header\r\n\r\n`,
    'bad percent-encoding': `GET /wishes/%zz HTTP/1.1\r\nHost: localhost\r\n${auth}Connection: close\r\n\r\n`,
    'path segment of 2000': `GET /wishes/${'i'.repeat(2000)} HTTP/1.1\r\nHost: localhost\r\n${auth}Connection: close\r\n\r\n`,
    'key as the path id': `GET /wishes/${key} HTTP/1.1\r\nHost: localhost\r\n${auth}Connection: close\r\n\r\n`,
    'key in an unknown route': `GET /${key}/x HTTP/1.1\r\nHost: localhost\r\n${auth}Connection: close\r\n\r\n`,
    'malformed JSON holding the key': `POST /wishes HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(`{"query": ${key}`)}\r\nConnection: close\r\n\r\n{"query": ${key}`,
    'key as a bearer token with a bad prefix': `GET /wishes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer x${key}\r\nConnection: close\r\n\r\n`,
    'no Host header': `GET /wishes HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`,
    'an unknown Expect': `POST /wishes HTTP/1.1\r\nHost: localhost\r\n${auth}Expect: ${key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n`,
    'CONNECT to the key': `CONNECT ${key}.example:443 HTTP/1.1\r\nHost: ${key}.example:443\r\n${auth}\r\n`,
    'key in Basic auth': `GET /wishes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic ${Buffer.from(`${key}:`).toString('base64')}\r\nConnection: close\r\n\r\n`,
  }
}

for (const kind of storeKinds()) {
  describe(`no secret in any log line (${kind.name}, LOG_LEVEL=trace)`, () => {
    let store: TestStore
    let server: ServerProcess
    let receiver: Receiver
    let stderr = ''
    before(async () => {
      store = await kind.open()
      receiver = await startReceiver({ respond: (_d, n) => ({ status: n === 0 ? 500 : 200 }) })
      server = await startServer({
        ...store.env,
        LOG_LEVEL: 'trace',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_RETRY_SCALE: '0.001',
        SANDBOX_SETTLEMENT_DELAY_MS: '0',
      })
      server.child.stderr!.on('data', (chunk) => { stderr += chunk })
    })
    after(async () => {
      if (server) await killServer(server)
      await receiver?.close()
      await store?.close()
    })

    test('normal traffic, webhook deliveries and parser-breaking requests leave no key or secret in the logs', async () => {
      const { key } = await createAccountService({ db: store.db, clock: systemClock }).createKey(`logs-${randomBase62(8)}`, 'write')
      const port = Number(new URL(server.url).port)
      const requestIds: string[] = []
      const seen = (id: string | null | undefined) => { if (id) requestIds.push(id) }

      // Normal traffic, errors included.
      const endpoint = await call(server.url, key, 'POST', '/webhook_endpoints', { url: receiver.url, events: ['*'] })
      assert.equal(endpoint.status, 201, endpoint.raw)
      const secret: string = endpoint.body.data.secret
      assert.match(secret, /^whsec_/)
      receiver.secret = secret
      seen(header(endpoint, 'request-id'))
      const wish = await call(server.url, key, 'POST', '/wishes', { query: 'a reading lamp', metadata: { note: 'hello' } })
      assert.equal(wish.status, 201, wish.raw)
      seen(header(wish, 'request-id'))
      for (const [method, path, body] of [
        ['GET', `/wishes/${wish.body.data.id}`, undefined],
        ['GET', '/wishes', undefined],
        ['GET', `/webhook_endpoints/${endpoint.body.data.id}`, undefined],
        ['GET', '/wishes/wish_missing', undefined],
        ['POST', '/wishes', { query: 7 }],
        ['POST', '/wishes', { query: 'x', secret, key }],
      ] as const) {
        const res = await call(server.url, key, method, path, body)
        assert.ok(res.status < 500, `${method} ${path}: ${res.raw}`)
        seen(header(res, 'request-id'))
      }
      // ACP delegated cards (issue 15): accepted, refused on meaning, refused by the schema.
      const card = { type: 'card', card_number_type: 'fpan', number: CARD_NUMBER, exp_month: '11', exp_year: '2031', name: 'Jane Doe', cvc: CARD_CVC, display_card_funding_type: 'credit', display_brand: 'visa', display_last4: '1111' }
      const delegation = (paymentMethod: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
        payment_method: paymentMethod,
        allowance: { reason: 'one_time', max_amount: 2000, currency: 'usd', checkout_session_id: 'cs_1', merchant_id: 'm_1', expires_at: '2099-01-01T00:00:00Z' },
        risk_signals: [], metadata: {}, ...extra,
      })
      for (const body of [delegation(card), delegation({ ...card, number: BAD_CARD_NUMBER }), delegation({ ...card, exp_month: '13' }), delegation(card, { stray: CARD_NUMBER })]) {
        const res = await call(server.url, key, 'POST', '/agentic_commerce/delegate_payment', body, { 'api-version': '2026-04-17', 'idempotency-key': randomBase62(12) })
        assert.ok(res.status < 500, res.raw)
        seen(header(res, 'request-id'))
      }
      const wrongKey = await call(server.url, `${key.slice(0, -4)}zzzz`, 'GET', '/wishes')
      assert.equal(wrongKey.status, 401)
      seen(header(wrongKey, 'request-id'))

      // Hostile requests over raw sockets: every one is answered in the envelope.
      for (const [what, request] of Object.entries(hostileRequests(key))) {
        const exchange = await rawExchange(port, request)
        assert.ok(exchange.closed, `${what}: the connection is closed`)
        const [res] = parseResponses(exchange.received)
        assert.ok(res, `${what}: an answer`)
        assert.ok(res.status >= 400 && res.status < 500, `${what}: ${res.status} ${res.raw}`)
        assert.equal(typeof res.body?.error?.code, 'string', `${what}: ${res.raw}`)
        seen(res.headers['request-id'] as string)
      }

      // The first delivery is refused, the retry accepted: both signed with the secret.
      await waitFor(async () => (receiver.deliveries.some((d) => d.answered === 200 && d.verified) ? true : undefined), 30_000, 'a verified delivery')

      // Every request has its line before the process stops, then everything is flushed.
      await waitFor(async () => {
        const logged = new Set(server.logs().map((l) => l.request_id))
        return requestIds.every((id) => logged.has(id)) ? true : undefined
      }, 15_000, 'a log line for every request')
      const { code } = await stopServer(server)
      assert.equal(code, 0)

      const lines = server.output().split('\n').filter((l) => l.trim() !== '')
      const logLines = lines.filter((l) => l.startsWith('{'))
      assert.ok(logLines.some((l) => l.includes('"msg":"client error"')), 'parser errors are logged (without their bytes)')
      const needles = {
        ...forms('API key', key),
        ...forms('webhook secret', secret, { 'decoded key': Buffer.from(secret.slice('whsec_'.length), 'base64') }),
        'card number': CARD_NUMBER, 'refused card number': BAD_CARD_NUMBER, 'card number, hex': Buffer.from(CARD_NUMBER).toString('hex'),
        'card number, decimal bytes': [...Buffer.from(CARD_NUMBER)].join(','), 'CVC member': '"cvc"', 'CVC value': `"${CARD_CVC}"`,
      }
      for (const line of [...lines, ...stderr.split('\n')]) {
        assert.ok(!line.includes('rawPacket') || line.includes('[redacted'), `a raw packet is logged: ${line.slice(0, 300)}`)
        assert.ok(!line.includes('"type":"Buffer"'), `a Buffer is logged: ${line.slice(0, 300)}`)
        for (const [name, needle] of Object.entries(needles)) {
          assert.ok(!line.includes(needle), `${name} in a log line: ${line.slice(0, 300)}`)
        }
      }
    })
  })
}
