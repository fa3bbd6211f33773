/** Digits of the currency's minor unit (USD 2, JPY 0, KWD 3), from the browser's ICU data as the server does (src/lib/currency.ts). */
export function currencyExponent(currency: string): number {
  return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2
}

/** Minor units with their currency: 12345 USD -> "$123.45". */
export function formatMoney(minor: number, currency: string): string {
  const exponent = currencyExponent(currency)
  return new Intl.NumberFormat('en', { style: 'currency', currency, minimumFractionDigits: exponent, maximumFractionDigits: exponent })
    .format(minor / 10 ** exponent)
}

/** Major units with their currency (a wish's budget): 199.99 USD -> "$199.99". */
export function formatMajor(amount: number, currency: string): string {
  return new Intl.NumberFormat('en', { style: 'currency', currency }).format(amount)
}

/** What the user typed in major units ("12.5") as minor units (1250), or null if it is not an amount of this currency. */
export function parseMajor(text: string, currency: string): number | null {
  const exponent = currencyExponent(currency)
  const pattern = exponent === 0 ? /^\d+$/ : new RegExp(`^\\d+(\\.\\d{1,${exponent}})?$`)
  const trimmed = text.trim()
  if (!pattern.test(trimmed)) return null
  const [whole = '0', fraction = ''] = trimmed.split('.')
  return Number(whole) * 10 ** exponent + Number(fraction.padEnd(exponent, '0') || '0')
}

export function formatDate(iso: string | null): string {
  if (iso === null) return '—'
  return new Date(iso).toLocaleString('en', { dateStyle: 'medium', timeStyle: 'short' })
}

/** The dashboard page of an object, from its id's prefix; null for objects without a page. */
export function objectPath(id: string): string | null {
  const prefix = id.slice(0, id.indexOf('_'))
  const page = ({ wish: 'wishes', mdt: 'mandates', pay: 'payments', evt: 'events', we: 'webhooks' } as Record<string, string>)[prefix]
  return page ? `/dashboard/${page}/${id}` : null
}
