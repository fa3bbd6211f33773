import { CURRENCY_EXPONENTS } from './currency-exponents.js'

/**
 * ISO 4217 currencies and their minor-unit exponents, as the ICU data that ships with Node has them
 * (CLDR's currency digits), read from a table generated from it (lib/currency-exponents.ts) rather than
 * from ICU at run time: a process's first Intl.NumberFormat maps about 6.5 MB of ICU's locale data
 * (docs/performance.md, thirty-ninth pass), and test/unit/currency.test.ts holds the table to
 * the runtime's ICU.
 */
const EXPONENTS = new Map<string, number>(Object.entries(CURRENCY_EXPONENTS))

/** Upper-cases a code and tells whether it is a known ISO 4217 currency. */
export function normalizeCurrency(code: string): string | undefined {
  const upper = code.toUpperCase()
  return EXPONENTS.has(upper) ? upper : undefined
}

/** Digits after the decimal point in the currency's minor unit: USD 2, JPY 0, KWD 3. */
export function currencyExponent(code: string): number {
  const exponent = EXPONENTS.get(code.toUpperCase())
  // Codes reach here through normalizeCurrency: guessing one's exponent could scale an amount 100-fold.
  if (exponent === undefined) throw new Error(`${code} is not a currency: check it with normalizeCurrency first`)
  return exponent
}

/** Whether a major-unit amount fits the currency's minor unit (199.99 USD yes, 199.999 USD no). */
export function fitsMinorUnit(amount: number, code: string): boolean {
  const scaled = amount * 10 ** currencyExponent(code)
  return Math.abs(scaled - Math.round(scaled)) < 1e-6
}

/** Major units to integer minor units: 199.99 USD -> 19999, 500 JPY -> 500, 1.5 KWD -> 1500. */
export function toMinorUnits(amount: number, code: string): number {
  return Math.round(amount * 10 ** currencyExponent(code))
}
