import assert from 'node:assert/strict'
import fs from 'node:fs'
import { test } from 'node:test'
import { CURRENCY_TABLE_PATH, icuCurrencyExponents, renderCurrencyTable } from '../../scripts/generate-currencies.js'
import { currencyExponent, fitsMinorUnit, normalizeCurrency, toMinorUnits } from '../../src/lib/currency.js'

test('codes are accepted in any case and returned upper-case; unknown codes are refused', () => {
  assert.equal(normalizeCurrency('usd'), 'USD')
  assert.equal(normalizeCurrency('Eur'), 'EUR')
  assert.equal(normalizeCurrency('XYZ'), undefined)
  assert.equal(normalizeCurrency('US'), undefined)
})

test('minor-unit exponents follow ISO 4217', () => {
  assert.equal(currencyExponent('USD'), 2)
  assert.equal(currencyExponent('JPY'), 0)
  assert.equal(currencyExponent('KWD'), 3)
})

test('major to minor units, and whether an amount fits the minor unit', () => {
  assert.equal(toMinorUnits(199.99, 'USD'), 19999)
  assert.equal(toMinorUnits(0.1 + 0.2, 'USD'), 30)
  assert.equal(toMinorUnits(500, 'JPY'), 500)
  assert.equal(toMinorUnits(1.5, 'KWD'), 1500)
  assert.equal(fitsMinorUnit(199.99, 'USD'), true)
  assert.equal(fitsMinorUnit(199.999, 'USD'), false)
  assert.equal(fitsMinorUnit(1.5, 'JPY'), false)
  assert.equal(fitsMinorUnit(1.234, 'KWD'), true)
})

test('the generated table is what this runtime\'s ICU says (npm run currencies:generate when it is not)', () => {
  assert.equal(fs.readFileSync(CURRENCY_TABLE_PATH, 'utf8'), renderCurrencyTable(), 'src/lib/currency-exponents.ts is stale')
  // The same, through the functions the API calls: every code ICU lists is accepted with ICU's exponent.
  const icu = icuCurrencyExponents()
  assert.ok(icu.size > 150)
  for (const [code, exponent] of icu) {
    assert.equal(normalizeCurrency(code.toLowerCase()), code)
    assert.equal(currencyExponent(code), exponent, code)
  }
})

test('an exponent is found in any case; a code the table lacks gets ICU\'s 2, and a malformed one is an error', () => {
  assert.equal(currencyExponent('jpy'), 0)
  // Not accepted from requests, but a wish stored under another runtime's ICU may hold one.
  assert.equal(normalizeCurrency('ZZZ'), undefined)
  assert.equal(currencyExponent('ZZZ'), 2)
  assert.equal(new Intl.NumberFormat('en', { style: 'currency', currency: 'ZZZ' }).resolvedOptions().maximumFractionDigits, 2)
  assert.throws(() => toMinorUnits(1, 'US'), /US is not a currency code/)
  assert.throws(() => currencyExponent('US1'), /US1 is not a currency code/)
})
