import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { toAcpError } from '../../src/http/acp-errors.js'
import { errors } from '../../src/lib/errors.js'

/**
 * Wishpay's own refusals on the ACP route, as ACP's flat errors (src/http/acp-errors.ts): the official
 * examples of the idempotency and rate-limit errors, exactly; status and Retry-After kept.
 */
const ACP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/acp-2026-04-17')
const examples = JSON.parse(fs.readFileSync(path.join(ACP, 'examples.delegate_payment.json'), 'utf8'))

test('idempotency and rate-limit refusals become the official ACP examples', () => {
  const inFlight = toAcpError(errors.idempotencyKeyInUse(2))
  assert.deepEqual(inFlight.toBody(), examples.delegate_payment_error_idempotency_in_flight)
  assert.equal(inFlight.status, 409)
  assert.equal(inFlight.headers['Retry-After'], '2')
  const conflict = toAcpError(errors.idempotencyKeyReused())
  assert.deepEqual(conflict.toBody(), examples.delegate_payment_error_idempotency_conflict)
  assert.equal(conflict.status, 422)
  const missing = toAcpError(errors.idempotencyKeyMissing())
  assert.deepEqual(missing.toBody(), examples.delegate_payment_error_idempotency_key_required)
  assert.equal(missing.status, 400)
  const limited = toAcpError(errors.rateLimited(3))
  assert.deepEqual(limited.toBody(), examples.delegate_payment_error_rate_limit)
  assert.equal(limited.headers['Retry-After'], '3')
})

test('authentication, server errors and other refusals keep their status under ACP types', () => {
  assert.deepEqual([toAcpError(errors.invalidApiKey()).status, toAcpError(errors.invalidApiKey()).type], [401, 'unauthorized'])
  assert.deepEqual([toAcpError(new Error('boom')).status, toAcpError(new Error('boom')).type], [500, 'processing_error'])
  assert.deepEqual([toAcpError(errors.serviceUnavailable()).status, toAcpError(errors.serviceUnavailable()).type], [503, 'service_unavailable'])
  const other = toAcpError(errors.parameterInvalid('allowance.currency', 'bad'))
  assert.deepEqual([other.status, other.type, other.param], [400, 'invalid_request', '$.allowance.currency'])
})
