import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Ajv } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { AcpError, acpErrorFromValidation, acpErrors, jsonPointerToJsonPath } from '../../src/modules/acp/errors.js'
import { DelegatePaymentRequestSchema } from '../../src/modules/acp/schemas.js'

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/acp-2026-04-17')
const official = JSON.parse(fs.readFileSync(path.join(DIR, 'schema.delegate_payment.json'), 'utf8'))
const examples = JSON.parse(fs.readFileSync(path.join(DIR, 'examples.delegate_payment.json'), 'utf8'))
const officialAjv = (addFormatsModule as unknown as (a: Ajv2020) => Ajv2020)(new Ajv2020({ strict: false, allErrors: true }))
officialAjv.addSchema(official)
const officialError = officialAjv.compile({ $ref: `${official.$id}#/$defs/Error` })
const ajv = (addFormatsModule as unknown as (a: Ajv) => Ajv)(new Ajv({ strict: false, allErrors: true, coerceTypes: false }))
const validateRequest = ajv.compile(DelegatePaymentRequestSchema)

function errorFor(mutate: (b: any) => void): AcpError {
  const body = structuredClone(examples.delegate_payment_request)
  mutate(body)
  assert.equal(validateRequest(body), false)
  return acpErrorFromValidation(validateRequest.errors, body)
}

describe('ACP error factories', () => {
  test('idempotency errors are exactly the RFC §5.4 ones, statuses and bodies', () => {
    const required = acpErrors.idempotencyKeyRequired()
    assert.equal(required.status, 400)
    assert.deepEqual(required.toBody(), examples.delegate_payment_error_idempotency_key_required)
    const conflict = acpErrors.idempotencyConflict()
    assert.equal(conflict.status, 422)
    assert.deepEqual(conflict.toBody(), examples.delegate_payment_error_idempotency_conflict)
    const inFlight = acpErrors.idempotencyInFlight(2.2)
    assert.equal(inFlight.status, 409)
    assert.deepEqual(inFlight.toBody(), examples.delegate_payment_error_idempotency_in_flight)
    assert.deepEqual(inFlight.headers, { 'Retry-After': '3' })
  })

  test('rate limit matches examples.json; 401, 5xx and version errors as the spec names them', () => {
    const limited = acpErrors.rateLimited(30)
    assert.equal(limited.status, 429)
    assert.deepEqual(limited.toBody(), examples.delegate_payment_error_rate_limit)
    assert.equal(limited.headers['Retry-After'], '30')
    assert.deepEqual(acpErrors.rateLimited().headers, {})

    const unauthorized = acpErrors.unauthorized()
    assert.equal(unauthorized.status, 401)
    assert.deepEqual(unauthorized.toBody(), { type: 'unauthorized', code: 'unauthorized', message: 'Unauthorized' })
    assert.equal(unauthorized.headers['WWW-Authenticate'], 'Bearer')

    assert.deepEqual([acpErrors.processingError().status, acpErrors.processingError().type], [500, 'processing_error'])
    const unavailable = acpErrors.serviceUnavailable(5)
    assert.deepEqual([unavailable.status, unavailable.type, unavailable.code, unavailable.headers['Retry-After']], [503, 'service_unavailable', 'service_unavailable', '5'])

    const unsupported = acpErrors.unsupportedApiVersion('2025-01-01')
    assert.equal(unsupported.status, 400)
    assert.deepEqual(unsupported.toBody(), {
      type: 'invalid_request', code: 'unsupported_api_version', message: "API version '2025-01-01' is not supported", supported_versions: ['2026-04-17'],
    })
    const missing = acpErrors.missingApiVersion()
    assert.deepEqual([missing.status, missing.code, missing.toBody().supported_versions], [400, 'missing_api_version', ['2026-04-17']])
    assert.equal(JSON.stringify(missing), JSON.stringify(missing.toBody()))
    assert.ok(missing instanceof Error)
  })

  test('which factories conform to the official Error schema (its closed enums: upstream issue #161)', () => {
    const conforming = {
      invalidCard: acpErrors.invalidCard('Invalid card number provided', '$.payment_method.number'),
      idempotencyKeyRequired: acpErrors.idempotencyKeyRequired(),
      idempotencyConflict: acpErrors.idempotencyConflict(),
      idempotencyInFlight: acpErrors.idempotencyInFlight(),
      rateLimited: acpErrors.rateLimited(),
    }
    for (const [name, e] of Object.entries(conforming)) assert.ok(officialError(e.toBody()), `${name} ${JSON.stringify(officialError.errors)}`)
    const outside = {
      unauthorized: acpErrors.unauthorized(),
      missingApiVersion: acpErrors.missingApiVersion(),
      unsupportedApiVersion: acpErrors.unsupportedApiVersion('1999-01-01'),
      processingError: acpErrors.processingError(),
      serviceUnavailable: acpErrors.serviceUnavailable(),
      signature: acpErrors.signature('invalid_signature', 'x'),
      invalidRequest: acpErrors.invalidRequest('invalid_request', 'x'),
    }
    for (const [name, e] of Object.entries(outside)) assert.equal(officialError(e.toBody()), false, name)
  })
})

describe('acpErrorFromValidation', () => {
  test('JSON pointers become RFC 9535 JSONPaths with the $ root, as the schema example writes them', () => {
    assert.equal(jsonPointerToJsonPath(''), '$')
    assert.equal(jsonPointerToJsonPath('/payment_method/exp_year'), '$.payment_method.exp_year')
    assert.equal(jsonPointerToJsonPath('/risk_signals/0/type'), '$.risk_signals[0].type')
    assert.equal(jsonPointerToJsonPath('/metadata/a~1b'), "$.metadata['a/b']")
    assert.equal(jsonPointerToJsonPath("/metadata/it's"), "$.metadata['it\\'s']")
    assert.equal(jsonPointerToJsonPath('/metadata/0', { metadata: { 0: 'x' } }), "$.metadata['0']")
    assert.equal(jsonPointerToJsonPath('/risk_signals/0', { risk_signals: [{}] }), '$.risk_signals[0]')
  })

  test('one invalid_card error for the card, with the member as param', () => {
    const missing = errorFor((b) => { delete b.payment_method.number })
    assert.deepEqual(missing.toBody(), { type: 'invalid_request', code: 'invalid_card', message: 'payment_method.number is required', param: '$.payment_method.number' })
    assert.equal(missing.status, 400)
    assert.ok(officialError(missing.toBody()))

    const unknown = errorFor((b) => { b.payment_method.pin = '1234' })
    assert.deepEqual([unknown.code, unknown.param], ['invalid_card', '$.payment_method.pin'])

    const enumError = errorFor((b) => { b.payment_method.card_number_type = 'dpan' })
    assert.deepEqual([enumError.code, enumError.param, enumError.message],
      ['invalid_card', '$.payment_method.card_number_type', 'payment_method.card_number_type must be one of: fpan, network_token'])

    const constError = errorFor((b) => { b.payment_method.type = 'bank' })
    assert.deepEqual([constError.param, constError.message], ['$.payment_method.type', 'payment_method.type must be "card"'])

    const noCard = errorFor((b) => { delete b.payment_method })
    assert.deepEqual([noCard.code, noCard.param], ['invalid_card', '$.payment_method'])
  })

  test('other members: invalid_request, the JSONPath of the member, never a card value in the message', () => {
    const type = errorFor((b) => { b.allowance.max_amount = '2000' })
    assert.deepEqual(type.toBody(), { type: 'invalid_request', code: 'invalid_request', message: 'allowance.max_amount must be an integer', param: '$.allowance.max_amount' })
    const nested = errorFor((b) => { b.risk_signals[0].action = 'allow' })
    assert.equal(nested.param, '$.risk_signals[0].action')
    const top = errorFor((b) => { b.extra = 1 })
    assert.deepEqual([top.param, top.message], ['$.extra', 'extra is not a known member'])
    const format = errorFor((b) => { b.allowance.expires_at = 'tomorrow' })
    assert.deepEqual([format.param, format.message], ['$.allowance.expires_at', 'allowance.expires_at must be a valid date-time'])
    const pattern = errorFor((b) => { b.payment_method.display_last4 = 'x4242424242424242' })
    assert.ok(!JSON.stringify(pattern.toBody()).includes('4242424242424242'))

    assert.equal(validateRequest([]), false)
    const whole = acpErrorFromValidation(validateRequest.errors, [])
    assert.deepEqual(whole.toBody(), { type: 'invalid_request', code: 'invalid_request', message: 'Request body must be of type object' })
    assert.equal(acpErrorFromValidation(null).status, 400)
  })
})
