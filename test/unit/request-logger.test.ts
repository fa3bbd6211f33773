import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, test } from 'node:test'
import pino from 'pino'
import { LazyRequestLogger } from '../../src/http/request-logger.js'

/** A request's logger (src/http/request-logger.ts) is made on first use and logs what pino's child would. */
describe('lazy request logger', () => {
  function logger() {
    const lines: Record<string, unknown>[] = []
    const sink = new Writable({ write(chunk: Buffer, _encoding, done) { lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>); done() } })
    const parent = pino({ level: 'info', timestamp: false, redact: ['secret'] }, sink)
    let children = 0
    const child = parent.child.bind(parent)
    parent.child = ((...args: Parameters<typeof child>) => { children++; return child(...args) }) as typeof parent.child
    return { parent, lines, children: () => children }
  }

  test('makes no child until it logs, then one, whose lines match pino\'s child', async () => {
    const lazy = logger()
    const request = new LazyRequestLogger(lazy.parent, { request_id: 'req_1' }, {})
    assert.equal(request.isLevelEnabled('info'), true)
    assert.equal(request.isLevelEnabled('debug'), false)
    assert.equal(lazy.children(), 0, 'asking for the level makes no child')
    request.warn({ n: 1, secret: 's3cret' }, 'first')
    request.debug('not written')
    request.error(new Error('boom'), 'second')
    assert.equal(lazy.children(), 1)

    const direct = logger()
    const child = direct.parent.child({ request_id: 'req_1' }, {})
    child.warn({ n: 1, secret: 's3cret' }, 'first')
    child.debug('not written')
    child.error(new Error('boom'), 'second')
    await new Promise((resolve) => setImmediate(resolve))
    const comparable = (lines: Record<string, unknown>[]) => lines.map(({ pid: _pid, hostname: _host, err, ...rest }) => ({ ...rest, err: (err as { message?: string } | undefined)?.message }))
    assert.deepEqual(comparable(lazy.lines), comparable(direct.lines))
    assert.equal(lazy.lines[0]!.secret, '[Redacted]', 'redaction applies as in the child')
  })

  test('a route with a log level of its own decides by that level', () => {
    const lazy = logger()
    const request = new LazyRequestLogger(lazy.parent, { request_id: 'req_2' }, { level: 'warn' })
    assert.equal(request.isLevelEnabled('info'), false)
    assert.equal(request.isLevelEnabled('warn'), true)
  })
})
