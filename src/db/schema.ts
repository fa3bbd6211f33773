/**
 * Row types as stored. Timestamps are ISO 8601 UTC text with milliseconds in both dialects
 * (fixed width, so text order is time order); JSON members are stored as text.
 */
export interface AccountsTable {
  id: string
  name: string
  created_at: string
}

export interface ApiKeysTable {
  id: string
  account_id: string
  scope: 'read' | 'write'
  key_hash: string
  display_prefix: string
  created_at: string
  revoked_at: string | null
}

export interface WishesTable {
  id: string
  account_id: string
  status: string
  query: string
  budget_max: number | null
  budget_currency: string | null
  protocol: string
  category: string | null
  metadata: string
  expires_at: string | null
  created_at: string
  updated_at: string
}

export interface EventsTable {
  id: string
  account_id: string
  type: string
  object_id: string
  data: string
  request_id: string | null
  created_at: string
}

export interface DatabaseSchema {
  accounts: AccountsTable
  api_keys: ApiKeysTable
  wishes: WishesTable
  events: EventsTable
}
