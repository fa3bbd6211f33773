import assert from 'node:assert/strict'
import path from 'node:path'
import { test } from 'node:test'
import { ConfigError, loadConfig, multiProcessProblem } from '../../src/config.js'

test('defaults follow contract section 8', () => {
  const config = loadConfig({})
  assert.equal(config.port, 3000)
  assert.equal(config.host, '127.0.0.1')
  assert.equal(config.databaseUrl, undefined)
  assert.equal(config.dataDir, path.resolve('./data'))
  assert.equal(config.rateLimitPerSecond, 100)
  assert.equal(config.idempotencyTtlSeconds, 86400)
  assert.equal(config.sandboxSettlementDelayMs, 2000)
  assert.equal(config.webhookRetryScale, 1)
  assert.equal(config.webhookAllowPrivate, false)
  assert.equal(config.defaultProtocol, 'ap2')
  assert.equal(config.logLevel, 'info')
  assert.equal(config.production, false)
  assert.equal(config.workers, 1)
  assert.ok(Object.isFrozen(config))
})

test('values are parsed and typed', () => {
  const config = loadConfig({
    PORT: '8080', DATABASE_URL: 'postgres://u@h:5432/db', WEBHOOK_ALLOW_PRIVATE: 'true',
    DEFAULT_PROTOCOL: 'ACP', WEBHOOK_RETRY_SCALE: '0.001', NODE_ENV: 'production',
  })
  assert.equal(config.port, 8080)
  assert.equal(config.databaseUrl, 'postgres://u@h:5432/db')
  assert.equal(config.webhookAllowPrivate, true)
  assert.equal(config.defaultProtocol, 'acp')
  assert.equal(config.webhookRetryScale, 0.001)
  assert.equal(config.production, true)
})

test('every bad variable is named, one line each', () => {
  assert.throws(
    () => loadConfig({ PORT: 'abc', RATE_LIMIT_PER_SECOND: '0', DATABASE_URL: 'mysql://x', WEBHOOK_ALLOW_PRIVATE: 'maybe' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      const lines = error.message.split('\n')
      assert.equal(lines.length, 4)
      assert.match(lines[0]!, /^Invalid configuration: PORT must be an integer between 0 and 65535 \(got "abc"\)$/)
      assert.match(lines[1]!, /^Invalid configuration: DATABASE_URL /)
      assert.match(lines[2]!, /^Invalid configuration: RATE_LIMIT_PER_SECOND /)
      assert.match(lines[3]!, /^Invalid configuration: WEBHOOK_ALLOW_PRIVATE /)
      return true
    },
  )
  for (const [name, value] of [['PORT', '70000'], ['PORT', '1.5'], ['LOG_LEVEL', 'loud'], ['WEBHOOK_RETRY_SCALE', '-1'], ['IDEMPOTENCY_TTL_SECONDS', 'x']]) {
    assert.throws(() => loadConfig({ [name!]: value }), new RegExp(`Invalid configuration: ${name} `))
  }
})

test('an empty variable counts as unset', () => {
  const config = loadConfig({ DATABASE_URL: '', PORT: ' ', METRICS_TOKEN: '', DEFAULT_PROTOCOL: '' })
  assert.equal(config.databaseUrl, undefined)
  assert.equal(config.port, 3000)
  assert.equal(config.metricsToken, undefined)
  assert.equal(config.defaultProtocol, 'ap2')
})

test('WORKERS is a whole number of processes, 1..64', () => {
  assert.equal(loadConfig({ WORKERS: '4' }).workers, 4)
  assert.equal(loadConfig({ WORKERS: ' 2 ' }).workers, 2)
  for (const value of ['0', '-1', '1.5', 'two', '65']) {
    assert.throws(() => loadConfig({ WORKERS: value }), (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      assert.equal(error.message, `Invalid configuration: WORKERS must be an integer between 1 and 64 (got ${JSON.stringify(value)})`)
      return true
    })
  }
})

test('several workers need PostgreSQL: the embedded store is single-process', () => {
  assert.equal(multiProcessProblem(loadConfig({})), undefined)
  assert.equal(multiProcessProblem(loadConfig({ WORKERS: '1' })), undefined)
  assert.equal(multiProcessProblem(loadConfig({ WORKERS: '4', DATABASE_URL: 'postgres://u@h:5432/db' })), undefined)
  assert.match(multiProcessProblem(loadConfig({ WORKERS: '2' }))!,
    /^Invalid configuration: WORKERS=2 needs PostgreSQL \(DATABASE_URL\): the embedded SQLite store serves from one process/)
})
