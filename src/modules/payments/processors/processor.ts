/**
 * A payment processor adapter. Services talk only to this interface, so another processor is a
 * new file implementing it plus one line where the app is assembled (docs/processors.md).
 */
export interface ChargeRequest {
  paymentId: string
  amount: number
  currency: string
  paymentMethod: string
  protocol: string
}

export type Failure = { code: string, message: string }

/**
 * What starting a charge decided. `pending` means the outcome arrives later: the job runner calls
 * `settle` once `settleAfterMs` has passed.
 */
export type ChargeOutcome =
  | { status: 'succeeded' }
  | { status: 'failed', failure: Failure }
  | { status: 'pending', settleAfterMs: number }

export type SettlementOutcome = { status: 'succeeded' } | { status: 'failed', failure: Failure }

export interface Processor {
  readonly name: string
  /** The payment_method values this processor accepts. */
  readonly paymentMethods: readonly string[]
  /**
   * A simulated processor, whose `settle` decides in the process from the request alone: its pending
   * payments may be settled at once on request (`POST /payments/{id}/settle`). Absent for real ones.
   */
  readonly sandbox?: boolean
  /**
   * Decides a new charge, synchronously, while the payment is planned and before anything is written
   * (payments/plan.ts). It must not call out of the process: it may run inside a transaction (the general
   * path; on SQLite a group commit), or just before the one statement of the PostgreSQL single write, and
   * a write that does not commit cannot take back a call. An adapter that needs the network answers
   * `pending` and does that work in `settle`. It only decides: one payment may ask twice (once from the
   * single write, again from the general path when the first write leaves it the payment, with a new
   * paymentId), and only the decision of the write that commits is kept.
   */
  charge(request: ChargeRequest): ChargeOutcome
  /** The final outcome of a pending charge; may call out (it runs after commit, and is retried on error). */
  settle(request: ChargeRequest): Promise<SettlementOutcome>
}
