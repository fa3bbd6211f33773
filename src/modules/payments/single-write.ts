import type { Database } from '../../db/database.js'
import { byStore } from '../../db/dialect.js'
import { createGroupCommit } from '../../db/group-commit.js'
import { createStatementBatch, type StatementBatchOptions } from '../../db/statement-batch.js'
import type { Clock } from '../../lib/clock.js'
import type { RequestContext } from '../../lib/request-context.js'
import * as records from '../idempotency/repository.js'
import type { IdempotencyRecord, PendingAnswer } from '../idempotency/store.js'
import * as mandates from '../mandates/repository.js'
import { consumedMandate, type PaymentInput, type PaymentPlan, type Planned, planPayment } from './plan.js'
import * as repo from './repository.js'
import type { Processor } from './processors/processor.js'
import type { CreatePaymentInput } from './schemas.js'

/**
 * Applies a payment's plan (plan.ts), with its idempotency record, in a single write: on PostgreSQL one
 * statement after one read, on SQLite a piece of a group commit. It takes the plans whose mandate
 * change is the hold's one update (`keep`: a charge that succeeded on a multi-use mandate, or is
 * pending; `consume`: a single-use mandate's charge that succeeded). For any other plan (a refusal, a
 * declined charge, whose hold is released) and for a key that is not new it answers undefined, having
 * written nothing, and the general path does it all again from the start.
 */
export type CreateInOneWrite = (ctx: RequestContext, input: CreatePaymentInput, pending: PendingAnswer) => Promise<IdempotencyRecord | undefined>

/**
 * The request when it names its mandate and carries no AP2 closed mandate: a closed mandate is verified
 * asynchronously, which a group commit's synchronous section cannot, and a vault token is resolved first
 * (payments/vault-token.ts); both are the general path's.
 */
function plainInput(input: CreatePaymentInput): PaymentInput | undefined {
  if (input.ap2 !== undefined || input.vault_token !== undefined || input.mandate_id === undefined) return undefined
  return { ...input, mandate_id: input.mandate_id }
}

/**
 * The plan as this write applies it, when it is one it takes. A `consume` plan's `mandate.consumed`
 * event is built from the mandate as read, so its hold also requires the mandate unchanged since then.
 */
function oneWritePlan(planned: Planned, mandate: mandates.MandateRow | undefined): PaymentPlan | undefined {
  const plan = planned.plan
  if (!plan || !mandate || plan.ap2 !== undefined || plan.effect === 'release') return undefined
  if (plan.effect === 'keep') return plan
  const consumption = plan.consumption(consumedMandate(mandate, plan))
  return {
    ...plan,
    hold: { ...plan.hold, unchangedSince: mandate.updated_at },
    events: [...plan.events, ...consumption.events],
    jobs: [...plan.jobs, ...consumption.jobs],
  }
}

/** `batch`: how PostgreSQL groups the statements (tests make groups certain with one in flight). */
export function createSingleWrite(deps: { db: Database, clock: Clock, processor: Processor }, batchOptions?: StatementBatchOptions): CreateInOneWrite {
  const { db, clock, processor } = deps
  const kysely = db.kysely
  const answerOf = (plan: PaymentPlan, pending: PendingAnswer) => pending.record(201, { data: plan.response })

  /**
   * PostgreSQL: one read (mandate and endpoints), then the plan as one statement, committed with the
   * statements of other payments submitted at the same time (db/statement-batch.ts).
   */
  const statementWrite = (): CreateInOneWrite => {
    const batch = createStatementBatch(db.postgres!, batchOptions)
    return async (ctx, body, pending) => {
      const input = plainInput(body)
      if (!input) return undefined
      const { mandate, endpoints } = await repo.readForPayment(kysely, ctx.accountId, input.mandate_id)
      const plan = oneWritePlan(planPayment({ ctx, input, mandate, endpoints, processor, now: clock.now() }), mandate)
      if (!plan) return undefined
      const record = answerOf(plan, pending)
      try {
        const { saved } = await batch.run(repo.writePlanStatement(kysely, plan, record), input.mandate_id).then((r) => r.rows[0]!)
        return Number(saved) === 1 ? record : undefined
      } catch (error) {
        // The key was finished by another process since the replay check: the general path replays it.
        if (records.keyTaken(error)) return undefined
        throw error
      }
    }
  }

  /** SQLite: read and write in one synchronous piece of a group commit (one fsync for many payments). */
  const groupWrite = (sqlite: NonNullable<Database['sqlite']>): CreateInOneWrite => {
    const group = createGroupCommit({ kysely, sqlite })
    return async (ctx, body, pending) => {
      const input = plainInput(body)
      if (!input) return undefined
      try {
        return await group.submit((exec) => {
          const mandate = exec.all(mandates.findMandateStatement(kysely, ctx.accountId, input.mandate_id))[0]
          const endpoints = exec.all(repo.enabledEndpointsStatement(kysely, ctx.accountId))
          const plan = oneWritePlan(planPayment({ ctx, input, mandate, endpoints, processor, now: clock.now() }), mandate)
          if (!plan) return undefined
          const record = answerOf(plan, pending)
          // A piece has no savepoint (db/group-commit.ts): a record under the key, live or expired, turns it
          // away before its first write, where its insert would fail after the hold. The general path decides.
          if (exec.all(records.keyRecordedStatement(kysely, record.account_id, record.idempotency_key)).length > 0) return undefined
          // The read above decided within this same synchronous section, so the hold cannot refuse here; it
          // stays the authority all the same, as everywhere else money moves.
          if (exec.run(mandates.holdStatement(kysely, plan.hold)) === 0) return undefined
          exec.run(records.insertNew(kysely, record))
          for (const query of repo.planWriteQueries(kysely, plan)) exec.run(query)
          return record
        })
      } catch (error) {
        // Checked above; kept for a record that got there all the same, which failed this piece's batch.
        if (records.keyTaken(error)) return undefined
        throw error
      }
    }
  }

  return byStore(db, { postgres: statementWrite, sqlite: groupWrite })
}
