import assert from 'node:assert/strict'
import type { AddressInfo, Socket } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type Response, type TestApp, type TestAccount } from '../helpers/app.js'
import { assertError, assertInvalid } from '../helpers/assertions.js'
import { waitFor } from '../helpers/processes.js'
import { parseResponses, rawExchange } from '../helpers/raw-http.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Answers made before any route runs — by Fastify's router (bad percent-encoding, an over-long path
 * segment) or by Node's HTTP parser (headers too large, unknown method, bad Transfer-Encoding) — are
 * the contract's envelope with Request-Id and API-Version, like every other answer.
 */

/** The headers every answer carries, framework-made ones included. */
function assertSecurityHeaders(res: Response, what: string): void {
  assert.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: X-Content-Type-Options`)
}

/** An API answer: nothing on the way may store it. */
function assertNoStore(res: Response, what: string): void {
  assertSecurityHeaders(res, what)
  assert.equal(res.headers['cache-control'], 'no-store', `${what}: Cache-Control`)
}

/** A parser-level answer written on the socket: one complete response, then the server closes. */
function assertSocketAnswer(exchange: { received: string, closed: boolean }, status: number, code: string): Response {
  assert.ok(exchange.closed, 'the server closes the connection after its answer')
  const responses = parseResponses(exchange.received)
  assert.equal(responses.length, 1, exchange.received.slice(0, 500))
  const res = responses[0]!
  assertError(res, status, 'invalid_request_error', code)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  assert.equal(res.headers.connection, 'close')
  assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.raw))
  assertNoStore(res, code)
  return res
}

for (const kind of storeKinds()) {
  describe(`framework and parser errors (${kind.name})`, () => {
    let t: TestApp
    let a: TestAccount
    let port: number
    before(async () => {
      t = await startTestApp(kind)
      a = await t.account()
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      port = (t.app.server.address() as AddressInfo).port
    })
    after(async () => { await t.close() })

    describe('router errors (through the app)', () => {
      test('bad percent-encoding in a path is 400 invalid_url in the envelope', async () => {
        for (const url of ['/wishes/%zz', '/%', '/payments/%E0%A4%A', '/wishes/abc%']) {
          const res = await a.request('GET', url)
          const error = assertError(res, 400, 'invalid_request_error', 'invalid_url')
          assert.ok(!error.message.includes('FST_'), error.message)
          assertNoStore(res, url)
        }
      })

      test('HEAD with bad percent-encoding: 400 and the headers, no body', async () => {
        const res = await t.inject({ method: 'HEAD', url: '/%' })
        assert.equal(res.status, 400)
        assert.equal(res.raw, '')
        assert.match(String(res.headers['request-id']), /^req_/)
        assert.equal(res.headers['api-version'], '2026-11-01.beta')
        assertNoStore(res, 'HEAD /%')
      })

      test('an id up to 1024 characters is the route\'s 400 parameter_invalid (param id); longer is 414 uri_too_long', async () => {
        for (const length of [256, 300, 1024]) {
          const res = await a.request('GET', `/wishes/${'a'.repeat(length)}`)
          assertInvalid(res, 'id')
          assertNoStore(res, `id of ${length}`)
        }
        // An id within the schema's 255 is looked up (and not found), not refused.
        const found = await a.request('GET', `/wishes/${'a'.repeat(255)}`)
        assertError(found, 404, 'invalid_request_error', 'resource_missing')

        for (const url of [`/wishes/${'a'.repeat(1025)}`, `/payments/${'b'.repeat(5000)}`, `/wishes/${'c'.repeat(2000)}`]) {
          const res = await a.request('GET', url)
          const error = assertError(res, 414, 'invalid_request_error', 'uri_too_long')
          assert.ok(!error.message.includes('FST_'), error.message)
          assertNoStore(res, '414')
        }
        // The same without a key: the router answers before authentication.
        const anonymous = await t.inject({ method: 'GET', url: `/wishes/${'a'.repeat(1025)}` })
        assertError(anonymous, 414, 'invalid_request_error', 'uri_too_long')
      })

      test('a framework error over a real connection: envelope, headers, the connection stays usable', async () => {
        const exchange = await rawExchange(port,
          'GET /wishes/%zz HTTP/1.1\r\nHost: localhost\r\n\r\n' +
          'GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
        const [bad, health] = parseResponses(exchange.received)
        assertError(bad!, 400, 'invalid_request_error', 'invalid_url')
        assertNoStore(bad!, 'raw %zz')
        assert.equal(health!.status, 200)
        assertSecurityHeaders(health!, '/healthz')
      })
    })

    describe('parser errors (raw sockets)', () => {
      test('headers over 16 KiB with a real key: 431 request_header_fields_too_large', async () => {
        const exchange = await rawExchange(port,
          `GET /wishes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${a.key}\r\nX-Padding: ${'p'.repeat(70 * 1024)}\r\n\r\n`)
        const res = assertSocketAnswer(exchange, 431, 'request_header_fields_too_large')
        assert.ok(!res.raw.includes(a.key), 'the key is echoed')
      })

      test('a request line over 16 KiB: 431 request_header_fields_too_large', async () => {
        const exchange = await rawExchange(port, `GET /wishes?q=${'x'.repeat(17 * 1024)} HTTP/1.1\r\nHost: localhost\r\n\r\n`)
        assertSocketAnswer(exchange, 431, 'request_header_fields_too_large')
      })

      test('malformed HTTP is 400 bad_request: unknown method, bad Transfer-Encoding, bad header, bad version', async () => {
        const requests = {
          'unknown method': `FROB /wishes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${a.key}\r\n\r\n`,
          'bad Transfer-Encoding': `POST /wishes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${a.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked, identity\r\n\r\n`,
          'Content-Length and chunked': `POST /wishes HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
          'header without a colon': 'GET /wishes HTTP/1.1\r\nHost: localhost\r\nNot a header\r\n\r\n',
          'bad version': 'GET /wishes HTTP/9.9\r\nHost: localhost\r\n\r\n',
          'not HTTP at all': '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03',
        }
        for (const [what, request] of Object.entries(requests)) {
          const exchange = await rawExchange(port, Buffer.from(request, 'latin1'))
          const res = assertSocketAnswer(exchange, 400, 'bad_request')
          assert.match(res.body.error.message, /^The request is not valid HTTP\/1\.1: /, what)
          assert.ok(!res.raw.includes(a.key), `${what}: the key is echoed`)
        }
      })

      test('garbage after a good request on a keep-alive connection: the first answer intact, then the envelope', async () => {
        const exchange = await rawExchange(port,
          `GET /wishes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${a.key}\r\n\r\nFROB / HTTP/1.1\r\nHost: localhost\r\n\r\n`)
        assert.ok(exchange.closed)
        const [good, bad] = parseResponses(exchange.received)
        assert.equal(good!.status, 200, good!.raw)
        assert.ok(Array.isArray(good!.body.data))
        assertNoStore(good!, 'GET /wishes')
        assertError(bad!, 400, 'invalid_request_error', 'bad_request')
        assert.notEqual(bad!.headers['request-id'], good!.headers['request-id'])
      })

      test('what node:http would answer bare: no Host, an unknown Expect, CONNECT', async () => {
        const noHost = parseResponses((await rawExchange(port, `GET /wishes HTTP/1.1\r\nAuthorization: Bearer ${a.key}\r\n\r\n`)).received)
        assert.equal(noHost.length, 1)
        const error = assertError(noHost[0]!, 400, 'invalid_request_error', 'bad_request')
        assert.match(error.message, /Host header/)
        assert.equal(noHost[0]!.headers.connection, 'close')
        assertNoStore(noHost[0]!, 'no Host')
        // HTTP/1.0 has no Host requirement.
        const [old] = parseResponses((await rawExchange(port, 'GET /healthz HTTP/1.0\r\n\r\n')).received)
        assert.equal(old!.status, 200, old!.raw)

        const expect = await rawExchange(port, `POST /wishes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${a.key}\r\nExpect: teapot\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n`)
        assert.ok(expect.closed)
        const [expectation] = parseResponses(expect.received)
        assertError(expectation!, 417, 'invalid_request_error', 'expectation_failed')
        assertNoStore(expectation!, 'Expect')
        // 100-continue goes on to the route.
        const goOn = parseResponses((await rawExchange(port, `POST /wishes HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${a.key}\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 17\r\nConnection: close\r\n\r\n{"query":"a mug"}`)).received)
        assert.deepEqual(goOn.map((r) => r.status), [100, 201])

        const connect = await rawExchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')
        assertSocketAnswer(connect, 404, 'route_not_found')
      })

      test('a request that does not arrive in time: 408 request_timeout on the socket', async () => {
        // Node reports it after headersTimeout (60 s) or requestTimeout (300 s); the report is sent here
        // as Node sends it, on a real connection that has started a request and stalled.
        const accepted = new Promise<Socket>((resolve) => t.app.server.once('connection', resolve))
        const exchange = rawExchange(port, 'GET /wishes HTTP/1.1\r\nHost: localhost\r\n')
        const socket = await accepted
        // Wait until the stalled bytes have reached the server.
        await waitFor(async () => (socket.bytesRead > 0 ? true : undefined), 5000, 'the request bytes at the server', 5)
        t.app.server.emit('clientError', Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket)
        assertSocketAnswer(await exchange, 408, 'request_timeout')
      })

      test('the server still serves after all of that', async () => {
        const res = await fetch(`http://127.0.0.1:${port}/wishes`, { headers: { authorization: `Bearer ${a.key}` } })
        assert.equal(res.status, 200)
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
        assert.equal(res.headers.get('cache-control'), 'no-store')
      })
    })

    describe('security headers', () => {
      test('X-Content-Type-Options: nosniff on every answer; Cache-Control: no-store on every API answer', async () => {
        const created = await a.request('POST', '/wishes', { query: 'a lamp' })
        assert.equal(created.status, 201)
        const api: Record<string, Response> = {
          'POST /wishes 201': created,
          'GET /wishes/:id 200': await a.request('GET', `/wishes/${created.body.data.id}`),
          'GET /wishes 200': await a.request('GET', '/wishes'),
          'PUT /wishes/:id 200': await a.request('PUT', `/wishes/${created.body.data.id}`, { query: 'a brass lamp' }),
          'GET /payments 200': await a.request('GET', '/payments'),
          'GET /events 200': await a.request('GET', '/events'),
          'GET /wishes/:id 404': await a.request('GET', '/wishes/wish_missing'),
          'POST /wishes 400': await a.request('POST', '/wishes', { query: 7 }),
          'POST /wishes 400 invalid_json': await a.request('POST', '/wishes', '{"query":'),
          'POST /wishes 415': await a.request('POST', '/wishes', 'query=x', { headers: { 'content-type': 'text/plain' } }),
          'GET /wishes 401': await a.request('GET', '/wishes', undefined, { key: null }),
          'GET /wishes 401 bad key': await a.request('GET', '/wishes', undefined, { key: 'sk_notarealkeynotarealkeynotarealkey00' }),
          'POST /wishes 403': await a.request('POST', '/wishes', { query: 'x' }, { key: a.readKey }),
          'GET /nowhere 404': await a.request('GET', '/nowhere'),
        }
        for (const [what, res] of Object.entries(api)) {
          assert.ok(res.status > 0, what)
          assertNoStore(res, what)
        }
        const open: Record<string, Response> = {
          'GET /healthz': await t.inject({ method: 'GET', url: '/healthz' }),
          'GET /readyz': await t.inject({ method: 'GET', url: '/readyz' }),
          'GET /openapi.json': await t.inject({ method: 'GET', url: '/openapi.json' }),
          'GET /docs': await t.inject({ method: 'GET', url: '/docs' }),
          'GET /metrics': await t.inject({ method: 'GET', url: '/metrics' }),
          'GET /docs/static/swagger-ui.css': await t.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' }),
        }
        for (const [what, res] of Object.entries(open)) {
          assert.equal(res.status, 200, `${what}: ${res.raw.slice(0, 200)}`)
          assertSecurityHeaders(res, what)
          assert.match(String(res.headers['request-id']), /^req_/, what)
        }
      })
    })
  })
}
