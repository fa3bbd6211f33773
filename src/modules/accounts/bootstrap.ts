import type { Config } from '../../config.js'
import type { AccountService, CreatedKey } from './service.js'

/**
 * On the first start of an empty embedded database outside production, creates account
 * "default" with a write key, so `npm start` is followed by a working curl. Returns the key
 * for the caller to show once; undefined when nothing was created.
 */
export async function ensureDevelopmentKey(
  config: Pick<Config, 'databaseUrl' | 'production'>,
  accounts: Pick<AccountService, 'hasAnyAccount' | 'createKey'>,
): Promise<CreatedKey | undefined> {
  if (config.databaseUrl || config.production) return undefined
  if (await accounts.hasAnyAccount()) return undefined
  return accounts.createKey('default', 'write')
}

export function developmentKeyBanner(created: CreatedKey, baseUrl: string): string {
  const line = '='.repeat(78)
  return [
    '', line,
    '  Wishpay created a development account "default" and this API key.',
    '  It is shown only this once; keep it somewhere safe:',
    '',
    `      ${created.key}`,
    '',
    '  Try it:',
    `      curl -H "Authorization: Bearer ${created.key}" ${baseUrl}/wishes`,
    '',
    `  API reference: ${baseUrl}/docs    More keys: npx wishpay keys create --account NAME`,
    line, '',
  ].join('\n')
}
