import type { Migration } from 'kysely'
import * as initial from './0001_initial.js'
import * as payments from './0002_payments.js'
import * as webhooks from './0003_webhooks.js'
import * as wishListIndex from './0004_wish_list_index.js'
import * as wishCounts from './0005_wish_counts.js'
import * as mandatesWithinWish from './0006_mandates_within_wish.js'
import * as agents from './0007_agents.js'
import * as trustedKeys from './0008_trusted_keys.js'
import * as ap2 from './0009_ap2.js'
import * as acpVaultTokens from './0010_acp_vault_tokens.js'
import * as listCursorIndexes from './0011_list_cursor_indexes.js'
import * as paymentCounts from './0012_payment_counts.js'
import * as eventCounts from './0013_event_counts.js'
import * as attemptCounts from './0014_attempt_counts.js'
import * as retentionIndexes from './0015_retention_indexes.js'
import * as partialWishIndexes from './0016_partial_wish_indexes.js'

/**
 * The explicit, ordered migration registry. Append only: a migration that has shipped is never
 * edited, a change is a new entry. Names sort in the order they must run.
 */
export const migrations: Record<string, Migration> = {
  '0001_initial': initial,
  '0002_payments': payments,
  '0003_webhooks': webhooks,
  '0004_wish_list_index': wishListIndex,
  '0005_wish_counts': wishCounts,
  '0006_mandates_within_wish': mandatesWithinWish,
  '0007_agents': agents,
  '0008_trusted_keys': trustedKeys,
  '0009_ap2': ap2,
  '0010_acp_vault_tokens': acpVaultTokens,
  '0011_list_cursor_indexes': listCursorIndexes,
  '0012_payment_counts': paymentCounts,
  '0013_event_counts': eventCounts,
  '0014_attempt_counts': attemptCounts,
  '0015_retention_indexes': retentionIndexes,
  '0016_partial_wish_indexes': partialWishIndexes,
}
