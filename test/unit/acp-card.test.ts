import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml } from 'yaml'
import { brandFromNumber, cardFingerprint, cardProblem, cardView, luhnValid } from '../../src/modules/acp/card.js'
import type { AcpPaymentMethodCard } from '../../src/modules/acp/schemas.js'

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/acp-2026-04-17')
const official = JSON.parse(fs.readFileSync(path.join(DIR, 'schema.delegate_payment.json'), 'utf8'))
const examples = JSON.parse(fs.readFileSync(path.join(DIR, 'examples.delegate_payment.json'), 'utf8'))
const openapi = parseYaml(fs.readFileSync(path.join(DIR, 'openapi.delegate_payment.yaml'), 'utf8')) as any
const SECRET = 'fp-secret-for-tests'
const NOW = new Date('2026-06-15T12:00:00Z')

/** Every card of the official material. */
const officialCards: Array<[string, AcpPaymentMethodCard]> = [
  ['examples.json request', examples.delegate_payment_request.payment_method],
  ['json-schema PaymentMethodCard.example', official.$defs.PaymentMethodCard.example],
  ['json-schema DelegatePaymentRequest.example', official.$defs.DelegatePaymentRequest.example.payment_method],
  ['openapi PaymentMethodCard.example', openapi.components.schemas.PaymentMethodCard.example],
  ['openapi DelegatePaymentRequest.example', openapi.components.schemas.DelegatePaymentRequest.example.payment_method],
  ...Object.entries(openapi.paths['/agentic_commerce/delegate_payment'].post.requestBody.content['application/json'].examples as Record<string, any>)
    .map(([name, ex]): [string, AcpPaymentMethodCard] => [`openapi request ${name}`, ex.value.payment_method]),
]

describe('cardView', () => {
  test('never holds the number or the cvc, for every official example', () => {
    assert.ok(officialCards.length >= 6)
    for (const [label, card] of officialCards) {
      const view = JSON.stringify(cardView(card, SECRET))
      assert.ok(!view.includes(card.number), `${label}: number in ${view}`)
      if (card.cvc) assert.ok(!view.includes(`"${card.cvc}"`), `${label}: cvc in ${view}`)
      assert.ok(!/cvc|cryptogram|eci|"number"/.test(view), `${label}: ${view}`)
    }
  })

  test('keeps what a PSP may keep, from the official request example', () => {
    const card = examples.delegate_payment_request.payment_method as AcpPaymentMethodCard
    const view = cardView(card, SECRET)
    assert.deepEqual(view, {
      brand: 'visa', last4: '4242', funding: 'credit', exp_month: '11', exp_year: '2026', name: 'Jane Doe', iin: '424242',
      checks_performed: ['avs', 'cvv'], card_number_type: 'fpan',
      fingerprint: createHmac('sha256', SECRET).update('4242424242424242').digest('base64url'),
    })
    assert.match(view.fingerprint, /^[A-Za-z0-9_-]{43}$/)
  })

  test('brand derived when display_brand is absent; fingerprint normalizes, depends on the secret', () => {
    const base = examples.delegate_payment_request.payment_method as AcpPaymentMethodCard
    const { display_brand: _b, display_last4: _l, iin: _i, ...bare } = base
    const mc = cardView({ ...bare, number: '5555 5555 5555 4444' }, SECRET)
    assert.deepEqual([mc.brand, mc.last4, mc.iin], ['mastercard', '4444', '555555'])
    assert.equal(mc.fingerprint, cardFingerprint('5555555555554444', SECRET))
    assert.notEqual(mc.fingerprint, cardFingerprint('5555555555554444', 'other-secret'))
    assert.equal(cardView({ ...bare, checks_performed: undefined } as AcpPaymentMethodCard, SECRET).checks_performed.length, 0)
    // A network token: the card's iin and last four are the ones sent for display.
    const token = cardView({ ...base, card_number_type: 'network_token', number: '4895370012003478', iin: '41111111', display_last4: '1111' }, SECRET)
    assert.deepEqual([token.iin, token.last4, token.brand], ['411111', '1111', 'visa'])
    // A malformed short number is never kept whole.
    const short = cardView({ ...bare, number: '4242424242' }, SECRET)
    assert.deepEqual([short.iin, short.last4], [null, null])
  })

  test('brand table', () => {
    const cases: Array<[string, string]> = [
      ['4242424242424242', 'visa'], ['5105105105105100', 'mastercard'], ['2223003122003222', 'mastercard'], ['2720990000000000', 'mastercard'],
      ['378282246310005', 'amex'], ['341111111111111', 'amex'], ['6011111111111117', 'discover'], ['6445644564456445', 'discover'],
      ['6500000000000002', 'discover'], ['30569309025904', 'diners'], ['36227206271667', 'diners'], ['3530111333300000', 'jcb'],
      ['6200000000000005', 'unionpay'], ['2721000000000000', 'unknown'], ['9999999999999995', 'unknown'], ['', 'unknown'],
    ]
    for (const [number, brand] of cases) assert.equal(brandFromNumber(number), brand, number)
  })
})

describe('luhnValid and cardProblem', () => {
  test('Luhn', () => {
    for (const good of ['4242424242424242', '4242 4242 4242 4242', '378282246310005', '6011-1111-1111-1117']) assert.ok(luhnValid(good), good)
    for (const bad of ['4242424242424241', '42424242424', '4242abcd42424242', '', '00000000000000000000']) assert.equal(luhnValid(bad), false, bad)
  })

  test('the official cards pass at a date before their expiry; semantic refusals are 422 invalid_card with JSONPaths', () => {
    for (const [label, card] of officialCards) assert.equal(cardProblem(card, NOW), undefined, label)
    const card = examples.delegate_payment_request.payment_method as AcpPaymentMethodCard
    const problem = (patch: Partial<AcpPaymentMethodCard>, now = NOW) => cardProblem({ ...card, ...patch }, now)?.toBody()
    assert.deepEqual(problem({ exp_month: '13' }), { type: 'invalid_request', code: 'invalid_card', message: 'Invalid card expiration month', param: '$.payment_method.exp_month' })
    assert.equal(problem({ exp_month: '1' })?.param, '$.payment_method.exp_month')
    assert.equal(problem({ exp_year: '26' })?.param, '$.payment_method.exp_year')
    assert.equal(problem({ number: '4242424242424241' })?.message, 'Invalid card number provided')
    assert.equal(problem({ number: '4242424242424241', card_number_type: 'network_token' }), undefined)
    assert.equal(problem({}, new Date('2026-11-30T23:59:59Z')), undefined)
    assert.equal(problem({}, new Date('2026-12-01T00:00:00Z'))?.message, 'Card has expired')
    assert.equal(cardProblem({ ...card, number: '1' }, NOW)?.status, 422)
  })
})
