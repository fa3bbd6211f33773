import { createHmac } from 'node:crypto'
import { acpErrors, type AcpError } from './errors.js'
import type { AcpPaymentMethodCard } from './schemas.js'

/**
 * What Wishpay keeps of a delegated card (ACP Delegate Payment §3.3, §6: "Card data handling MUST
 * follow applicable PCI DSS requirements; logs MUST NOT contain full PAN or CVC").
 *
 * The view holds no PAN, CVC, cryptogram or ECI: only what PCI DSS lets a merchant keep in the clear
 * (the first six and last four digits, expiry, cardholder name) and a keyed fingerprint, so that the
 * same card can be recognised without being stored. The PAN and CVC go to the vault/processor only.
 */
export interface CardView {
  brand: string
  /** Of an fpan's number; of a network token, `display_last4` as sent, else the token's. Null for a number under 12 digits. */
  last4: string | null
  funding: AcpPaymentMethodCard['display_card_funding_type']
  exp_month: string | null
  exp_year: string | null
  name: string | null
  /** First six digits (PCI truncation keeps at most these and the last four): of an fpan's number; of a network token, `iin` as sent (cut to six), else the token's. */
  iin: string | null
  checks_performed: NonNullable<AcpPaymentMethodCard['checks_performed']>
  card_number_type: AcpPaymentMethodCard['card_number_type']
  /** base64url HMAC-SHA256(secret, normalized number): equal for equal numbers, useless without the secret. */
  fingerprint: string
}

/** The number as compared and fingerprinted: spaces and dashes removed. */
export function normalizeCardNumber(number: string): string {
  return number.replace(/[\s-]/g, '')
}

/** The Luhn (mod 10) check. False for anything but 12 to 19 digits. */
export function luhnValid(number: string): boolean {
  const digits = normalizeCardNumber(number)
  if (!/^[0-9]{12,19}$/.test(digits)) return false
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/**
 * Brand from the leading digits (IIN ranges as the networks publish them; the longest matching
 * prefix wins). Small on purpose: `display_brand`, when sent, always wins, and a number outside the
 * table is `unknown` rather than a guess.
 *
 * | brand      | ranges                                  |
 * |------------|-----------------------------------------|
 * | visa       | 4                                       |
 * | mastercard | 51–55, 2221–2720                        |
 * | amex       | 34, 37                                  |
 * | discover   | 6011, 644–649, 65                       |
 * | diners     | 300–305, 36, 38, 39                     |
 * | jcb        | 3528–3589                               |
 * | unionpay   | 62                                      |
 */
const BRAND_RANGES: ReadonlyArray<readonly [from: string, to: string, brand: string]> = [
  ['4', '4', 'visa'],
  ['51', '55', 'mastercard'],
  ['2221', '2720', 'mastercard'],
  ['34', '34', 'amex'],
  ['37', '37', 'amex'],
  ['6011', '6011', 'discover'],
  ['644', '649', 'discover'],
  ['65', '65', 'discover'],
  ['300', '305', 'diners'],
  ['36', '36', 'diners'],
  ['38', '39', 'diners'],
  ['3528', '3589', 'jcb'],
  ['62', '62', 'unionpay'],
]

export function brandFromNumber(number: string): string {
  const digits = normalizeCardNumber(number)
  let best: { length: number, brand: string } | undefined
  for (const [from, to, brand] of BRAND_RANGES) {
    const prefix = digits.slice(0, from.length)
    if (prefix.length < from.length || !/^[0-9]+$/.test(prefix)) continue
    const n = Number(prefix)
    if (n >= Number(from) && n <= Number(to) && (!best || from.length > best.length)) best = { length: from.length, brand }
  }
  return best?.brand ?? 'unknown'
}

export function cardFingerprint(number: string, secret: string | Buffer): string {
  return createHmac('sha256', secret).update(normalizeCardNumber(number), 'utf8').digest('base64url')
}

/**
 * The card as Wishpay may keep it. Each member is copied by name (never a spread), so a member
 * added to the schema later cannot leak into storage.
 */
export function cardView(paymentMethod: AcpPaymentMethodCard, fingerprintSecret: string | Buffer): CardView {
  const digits = normalizeCardNumber(paymentMethod.number)
  // An fpan is the card itself: its own digits win over the display members. A network token's
  // digits are the token's, so the card's iin and last four are the ones sent for display.
  const fpan = paymentMethod.card_number_type === 'fpan'
  // Digits are taken from a number only when it is long enough (12+) that six and four of them
  // still leave some hidden: a malformed short "number" is never kept whole.
  const longEnough = digits.length >= 12
  const ownIin = longEnough ? digits.slice(0, 6) : null
  const ownLast4 = longEnough ? digits.slice(-4) : null
  const sentIin = paymentMethod.iin !== undefined && /^[0-9]{6}/.test(paymentMethod.iin) ? paymentMethod.iin.slice(0, 6) : null
  const iin = fpan ? ownIin : (sentIin ?? ownIin)
  const last4 = fpan ? ownLast4 : (paymentMethod.display_last4 ?? ownLast4)
  return {
    brand: paymentMethod.display_brand?.trim().toLowerCase() || brandFromNumber(digits),
    last4,
    funding: paymentMethod.display_card_funding_type,
    exp_month: paymentMethod.exp_month ?? null,
    exp_year: paymentMethod.exp_year ?? null,
    name: paymentMethod.name ?? null,
    iin,
    checks_performed: [...(paymentMethod.checks_performed ?? [])],
    card_number_type: paymentMethod.card_number_type,
    fingerprint: cardFingerprint(digits, fingerprintSecret),
  }
}

/**
 * The semantic card rules of RFC §7 that the JSON Schema does not express, as one 422 invalid_card
 * (OpenAPI "422: Semantic validation error", example "Invalid card expiration month", param
 * "payment_method.exp_month", written here as the JSONPath "$.payment_method.exp_month"):
 * - "exp_month length ≤ 2 and value "01"–"12"", "exp_year length ≤ 4 and four digits";
 * - an expired card (the month of exp_month/exp_year is over at `now`, in UTC);
 * - an fpan number that is not 12–19 digits passing Luhn (examples.delegate_payment.json:
 *   "Invalid card number provided", param "payment_method.number"). Network tokens are not
 *   Luhn-checked: the spec says nothing of their form.
 * Returns undefined when the card passes.
 */
export function cardProblem(paymentMethod: AcpPaymentMethodCard, now: Date): AcpError | undefined {
  const { exp_month: month, exp_year: year } = paymentMethod
  if (month !== undefined && !/^(0[1-9]|1[0-2])$/.test(month)) {
    return acpErrors.invalidCard('Invalid card expiration month', '$.payment_method.exp_month', 422)
  }
  if (year !== undefined && !/^[0-9]{4}$/.test(year)) {
    return acpErrors.invalidCard('Invalid card expiration year', '$.payment_method.exp_year', 422)
  }
  if (month !== undefined && year !== undefined) {
    const firstDayAfter = Date.UTC(Number(year), Number(month), 1) // month is 1-based, so this is the next month
    if (now.getTime() >= firstDayAfter) return acpErrors.invalidCard('Card has expired', '$.payment_method.exp_year', 422)
  }
  if (paymentMethod.card_number_type === 'fpan' && !luhnValid(paymentMethod.number)) {
    return acpErrors.invalidCard('Invalid card number provided', '$.payment_method.number', 422)
  }
  return undefined
}
