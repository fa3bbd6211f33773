import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, test } from 'node:test'
import Fastify, { type FastifyBaseLogger, LogController } from 'fastify'
import pino from 'pino'
import { registerRequestContext, REQUEST_ID_LOG_LABEL } from '../../src/http/request-context.js'
import { loggerOptions } from '../../src/logger.js'

/**
 * src/http/request-context.ts writes the request line through a logger without redaction: the line must
 * be byte for byte the one the request's own (redacting) logger writes, and be written only when that
 * logger would write it.
 */
async function linesOf(level: string, principal: { accountId: string, agentId: string | null } | null) {
  const lines: string[] = []
  const stream = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done() } })
  const app = Fastify({
    loggerInstance: pino(loggerOptions({ logLevel: level as 'info' }), stream) as FastifyBaseLogger,
    logController: new LogController({ requestIdLogLabel: REQUEST_ID_LOG_LABEL, disableRequestLogging: true }),
  })
  registerRequestContext(app)
  app.addHook('onRequest', (request, _reply, done) => {
    request.principal = principal === null ? null : { keyId: 'key_1', scope: 'read', ...principal }
    done()
  })
  // The line as the request's own logger writes it, for comparison.
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info({
      account_id: request.principal?.accountId,
      ...(request.principal?.agentId ? { agent_id: request.principal.agentId } : {}),
      method: request.method, route: request.routeOptions.url ?? 'not_found', status: reply.statusCode, duration_ms: 0,
    }, 'request')
    done()
  })
  app.get('/things/:id', async () => ({ ok: true }))
  await app.inject({ method: 'GET', url: '/things/1' })
  await app.inject({ method: 'GET', url: '/nowhere' })
  await app.close()
  return lines.map((line) => line.replace(/"time":"[^"]*"/, '"time":"T"').replace(/"duration_ms":[0-9.e-]+/, '"duration_ms":0'))
}

describe('the request line', () => {
  // The last principal's ids hold what JSON must escape (never true of our ids, but the line stays JSON).
  for (const principal of [null, { accountId: 'acct_1', agentId: null }, { accountId: 'acct_1', agentId: 'agt_1' }, { accountId: 'acct_"1"\\\n\u0001', agentId: 'agt_é\u2028' }]) {
    test(`is the redacting logger's line, byte for byte (${principal?.agentId ?? principal?.accountId ?? 'no principal'})`, async () => {
      const lines = await linesOf('info', principal)
      assert.equal(lines.length, 4)
      assert.equal(lines[0], lines[1])
      assert.equal(lines[2], lines[3])
      assert.match(lines[0]!, /^\{"level":30,"time":"T","service":"wishpay","request_id":"req-[^"]+",/)
      assert.match(lines[2]!, /"route":"not_found","status":404/)
    })
  }

  test('is not written when the logger writes no info lines', async () => {
    assert.deepEqual(await linesOf('warn', null), [])
  })
})
