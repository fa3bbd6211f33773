import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isDatabaseUnavailable, isUniqueViolation } from '../../src/db/errors.js'

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code })

test('connection failures of either dialect count as the database being unavailable (503)', () => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', '08006', '57P01', '57P03', '53300', 'SQLITE_BUSY', 'SQLITE_FULL']) {
    assert.equal(isDatabaseUnavailable(withCode(code)), true, code)
  }
  for (const message of [
    'Connection terminated unexpectedly', 'Query read timeout', 'timeout exceeded when trying to connect',
    'Client has encountered a connection error and is not queryable',
  ]) assert.equal(isDatabaseUnavailable(new Error(message)), true, message)
  assert.equal(isDatabaseUnavailable(new Error('wrapped', { cause: withCode('ECONNREFUSED') })), true)
})

test('client mistakes and bugs are not outages', () => {
  for (const error of [withCode('23505'), withCode('42P01'), new TypeError('x is undefined'), 'string', null]) {
    assert.equal(isDatabaseUnavailable(error), false, String(error))
  }
  assert.equal(isUniqueViolation(withCode('23505')), true)
  assert.equal(isUniqueViolation(withCode('SQLITE_CONSTRAINT_PRIMARYKEY')), true)
  assert.equal(isUniqueViolation(withCode('SQLITE_BUSY')), false)
})
