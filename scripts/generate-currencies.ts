/**
 * Writes src/lib/currency-exponents.ts, the ISO 4217 codes the API accepts and their minor units'
 * exponents, from the ICU data that ships with Node (CLDR's currency digits): `npm run
 * currencies:generate`. The server reads the table instead of asking ICU, since a server's first
 * Intl.NumberFormat maps about 6.5 MB of ICU's locale data (docs/performance.md, thirty-ninth pass).
 * test/unit/currency.test.ts renders it again on the runtime under test and fails when
 * this runtime's ICU says otherwise. The exponents are CLDR's (IQD 0, HUF 0), not always ISO 4217's, as
 * before the table. A new exponent for a code already listed changes which wish budgets are accepted and
 * what a stored budget is in minor units: review it as a change to the API, not as a data refresh.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

export const CURRENCY_TABLE_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/lib/currency-exponents.ts')

const HEADER = `/**
 * GENERATED FILE: do not edit. Every ISO 4217 code Node's ICU knows (\`Intl.supportedValuesOf('currency')\`)
 * and the digits after the decimal point of its minor unit, as ICU formats it (CLDR's currency digits:
 * USD 2, JPY 0, KWD 3). Regenerate with \`npm run currencies:generate\` (scripts/generate-currencies.ts);
 * \`npm test\` fails when the runtime's ICU says otherwise.
 */
`

/** This runtime's ICU: each currency code and its minor unit's exponent. */
export function icuCurrencyExponents(): Map<string, number> {
  const exponents = new Map<string, number>()
  for (const code of Intl.supportedValuesOf('currency')) {
    exponents.set(code, new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits ?? 2)
  }
  return exponents
}

/** The text of src/lib/currency-exponents.ts: ten codes a line, in code order. */
export function renderCurrencyTable(exponents: Map<string, number> = icuCurrencyExponents()): string {
  const entries = [...exponents].sort(([a], [b]) => (a < b ? -1 : 1)).map(([code, exponent]) => `${code}: ${exponent},`)
  const lines: string[] = []
  for (let i = 0; i < entries.length; i += 10) lines.push(`  ${entries.slice(i, i + 10).join(' ')}`)
  return `${HEADER}export const CURRENCY_EXPONENTS: Readonly<Record<string, number>> = {\n${lines.join('\n')}\n}\n`
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  fs.writeFileSync(CURRENCY_TABLE_PATH, renderCurrencyTable())
  process.stdout.write(`Wrote ${path.relative(process.cwd(), CURRENCY_TABLE_PATH)}.\n`)
}
