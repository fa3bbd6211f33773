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
  scope: 'read' | 'write' | 'agent'
  /** The agent an `agent` key acts for (migration 0007); null for sk_/rk_ keys. */
  agent_id: string | null
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
  /** The agent the wish is assigned to (migration 0007). */
  agent_id: string | null
  created_at: string
  updated_at: string
}

/** An account's agents (migration 0007). */
export interface AgentsTable {
  id: string
  account_id: string
  name: string
  status: 'active' | 'disabled'
  metadata: string
  /** A public JWK (JSON text), the key AP2 `cnf` names; null when none was given. */
  public_jwk: string | null
  created_at: string
  updated_at: string
}

/** A public key an account trusts to sign AP2 open mandates (migration 0008). */
export interface TrustedKeysTable {
  id: string
  account_id: string
  /** Unique per account, revoked keys included. */
  kid: string
  role: 'trusted_agent_provider' | 'user_credential_issuer' | 'acp_client'
  /** The public JWK (JSON text), public members only. */
  public_jwk: string
  status: 'active' | 'revoked'
  description: string | null
  created_at: string
  revoked_at: string | null
}

/** Wishes per account and stored status, spread over a few slots (migration 0005). */
export interface WishCountsTable {
  account_id: string
  status: string
  slot: number
  n: number | string
}

/** Payments of an account in a status, as of the last fold of payment_count_changes. */
export interface PaymentCountsTable {
  account_id: string
  status: string
  n: number | string
}

/** A change to payment_counts not yet folded into it: +1 for a new payment, -1/+1 for a status change. */
export interface PaymentCountChangesTable {
  account_id: string
  status: string
  n: number
}

/** Events of an account of a type, as of the last fold of event_count_changes. */
export interface EventCountsTable {
  account_id: string
  type: string
  n: number | string
}

/** A change to event_counts not yet folded into it: +n for events written, -n for events deleted by retention. */
export interface EventCountChangesTable {
  account_id: string
  type: string
  n: number
}

/** Delivery attempts to an endpoint, as of the last fold of attempt_count_changes. */
export interface AttemptCountsTable {
  account_id: string
  endpoint_id: string
  n: number | string
}

/** A change to attempt_counts not yet folded into it: +1 for an attempt recorded, -n for attempts deleted by retention. */
export interface AttemptCountChangesTable {
  account_id: string
  endpoint_id: string
  n: number
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

export interface IdempotencyKeysTable {
  account_id: string
  idempotency_key: string
  fingerprint: string
  response_status: number
  /** The exact bytes of the first response, replayed as they are. */
  response_body: string
  created_at: string
  expires_at: string
}

/** Money columns are integer minor units (bigint in PostgreSQL, parsed to numbers). */
export interface MandatesTable {
  id: string
  account_id: string
  protocol: string
  /** Stored status; an active mandate past expires_at reads expired. */
  status: string
  wish_id: string | null
  /** The agent the mandate is granted to: agent keys (`ak_`) of other agents may not pay with it; the account's `sk_` keys may (migration 0007). */
  agent_id: string | null
  currency: string
  max_amount: number
  budget_amount: number
  /** What succeeded and in-flight payments hold of the budget. */
  amount_used: number
  usage: string
  /** Succeeded and in-flight payments. */
  uses_count: number
  expires_at: string
  not_before: string | null
  metadata: string
  created_at: string
  updated_at: string
  revoked_at: string | null
  /** AP2 (migration 0009): least amount per payment (payment.amount_range.min), null: none. */
  min_amount: number | null
  /** AP2: most payments (agent_recurrence.max_occurrences), null: no cap on the count. */
  max_uses: number | null
  /** AP2: agent_recurrence.frequency; with a window, one payment per window. */
  recurrence_frequency: string | null
  /** AP2: when the last payment that still holds was made (for the recurrence window). */
  last_payment_at: string | null
  /** AP2: base64url sha-256 of the open mandate's issuer JWT; unique per account. */
  ap2_open_hash: string | null
  /** AP2: the rest of the open mandate (issuer, cnf, allowed lists...) as JSON; null for a plain mandate. */
  ap2: string | null
}

export interface PaymentsTable {
  id: string
  account_id: string
  mandate_id: string
  wish_id: string | null
  amount: number
  currency: string
  status: string
  protocol_type: string
  payment_method: string
  amount_refunded: number
  failure_code: string | null
  failure_message: string | null
  metadata: string
  created_at: string
  updated_at: string
  /** AP2 (migration 0009): the closed mandate the payment was made with, as JSON; null for a plain payment. */
  ap2: string | null
}

export interface RefundsTable {
  id: string
  account_id: string
  payment_id: string
  amount: number
  reason: string | null
  status: string
  created_at: string
}

export interface JobsTable {
  id: string
  type: string
  payload: string
  run_at: string
  attempts: number
  /** Set while a process works on the job; an expired lease makes it claimable again. */
  locked_until: string | null
  last_error: string | null
  created_at: string
}

export interface WebhookEndpointsTable {
  id: string
  account_id: string
  url: string
  /** JSON array of event types, or ["*"]. */
  events: string
  description: string | null
  secret: string
  status: 'enabled' | 'disabled'
  disabled_reason: string | null
  created_at: string
  updated_at: string
}

export interface WebhookAttemptsTable {
  id: string
  account_id: string
  endpoint_id: string
  event_id: string
  event_type: string
  attempt: number
  status_code: number | null
  error: string | null
  /** 1 when the receiver answered 2xx, else 0. */
  succeeded: number
  duration_ms: number
  next_retry_at: string | null
  created_at: string
}

export interface DatabaseSchema {
  accounts: AccountsTable
  api_keys: ApiKeysTable
  agents: AgentsTable
  trusted_keys: TrustedKeysTable
  wishes: WishesTable
  wish_counts: WishCountsTable
  events: EventsTable
  event_counts: EventCountsTable
  event_count_changes: EventCountChangesTable
  idempotency_keys: IdempotencyKeysTable
  mandates: MandatesTable
  payments: PaymentsTable
  payment_counts: PaymentCountsTable
  payment_count_changes: PaymentCountChangesTable
  refunds: RefundsTable
  jobs: JobsTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_attempts: WebhookAttemptsTable
  attempt_counts: AttemptCountsTable
  attempt_count_changes: AttemptCountChangesTable
  ap2_nonces: Ap2NoncesTable
  ap2_closed_mandates: Ap2ClosedMandatesTable
  signing_keys: SigningKeysTable
  receipts: ReceiptsTable
  vault_tokens: VaultTokensTable
  server_secrets: ServerSecretsTable
}

/** Secrets the server makes for itself (migration 0010). */
export interface ServerSecretsTable {
  name: string
  value: string
  created_at: string
}

/** ACP vault tokens (migration 0010): JSON text in allowance, card, billing_address, risk_signals, metadata. */
export interface VaultTokensTable {
  id: string
  account_id: string
  mandate_id: string
  parent_mandate_id: string | null
  merchant_id: string
  checkout_session_id: string
  allowance: string
  card: string
  billing_address: string | null
  risk_signals: string
  metadata: string
  created_at: string
}

/** AP2 nonces (migration 0009): single use, short-lived. */
export interface Ap2NoncesTable {
  nonce: string
  account_id: string
  agent_id: string | null
  expires_at: string
  used_at: string | null
  created_at: string
}

/** Every accepted AP2 closed mandate, by the hash of its signed JWT (migration 0009). */
export interface Ap2ClosedMandatesTable {
  hash: string
  account_id: string
  mandate_id: string
  payment_id: string
  created_at: string
}

/** Wishpay's own signing keys, for receipts (migration 0009). status: active | retired. */
export interface SigningKeysTable {
  kid: string
  alg: string
  public_jwk: string
  private_jwk: string
  status: string
  created_at: string
  retired_at: string | null
}

/** The signed AP2 PaymentReceipt of a payment (migration 0009). */
export interface ReceiptsTable {
  payment_id: string
  account_id: string
  kid: string
  jwt: string
  created_at: string
}
