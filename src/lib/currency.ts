/**
 * ISO 4217 currencies and their minor-unit exponents, taken from the ICU data that ships
 * with Node (full-icu is the default build) rather than from a hand-kept table.
 */
const KNOWN = new Set<string>(Intl.supportedValuesOf('currency'))
const exponents = new Map<string, number>()

/** Upper-cases a code and tells whether it is a known ISO 4217 currency. */
export function normalizeCurrency(code: string): string | undefined {
  const upper = code.toUpperCase()
  return KNOWN.has(upper) ? upper : undefined
}

/** Digits after the decimal point in the currency's minor unit: USD 2, JPY 0, KWD 3. */
export function currencyExponent(code: string): number {
  let exponent = exponents.get(code)
  if (exponent === undefined) {
    exponent = new Intl.NumberFormat('en', { style: 'currency', currency: code })
      .resolvedOptions().maximumFractionDigits ?? 2
    exponents.set(code, exponent)
  }
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
