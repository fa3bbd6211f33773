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
  const upper = code.toUpperCase()
  const exponent = EXPONENTS.get(upper)
  if (exponent !== undefined) return exponent
  // A code of ISO 4217's shape the table lacks: one stored when another runtime's ICU listed it (a
  // wish's budget). ICU gives such a code 2 digits, as this did before the table.
  if (/^[A-Z]{3}$/.test(upper)) return 2
  // Anything else never passed normalizeCurrency: a caller's mistake, not an amount to guess.
  throw new Error(`${code} is not a currency code: check it with normalizeCurrency first`)
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
