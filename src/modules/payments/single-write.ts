import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { createGroupCommit } from '../../db/group-commit.js'
import { insertRowsAfter } from '../../db/pg-statement.js'
import type { DatabaseSchema } from '../../db/schema.js'
import { inBatches } from '../queue/repository.js'
import type { Clock } from '../../lib/clock.js'
import type { RequestContext } from '../../lib/request-context.js'
import * as records from '../idempotency/repository.js'
import type { IdempotencyRecord, PendingAnswer } from '../idempotency/store.js'
import * as mandates from '../mandates/repository.js'
import { type PaymentPlan, type Planned, planPayment } from './plan.js'
import type { Processor } from './processors/processor.js'
import type { CreatePaymentInput } from './schemas.js'

/**
 * Applies a payment's plan (plan.ts), with its idempotency record, in a single write: on PostgreSQL one
 * statement after one read, on SQLite a piece of a group commit. It takes the plans whose mandate
 * change is a plain hold (`keep`: a charge that succeeded on a multi-use mandate, or is pending); for
 * any other plan (a refusal, a declined charge, a single-use mandate consumed) and for a key that is not
 * new it answers undefined, having written nothing, and the general path does it all again from the start.
 */
export type CreateInOneWrite = (ctx: RequestContext, input: CreatePaymentInput, pending: PendingAnswer) => Promise<IdempotencyRecord | undefined>

/** The plan, when it is one this write takes. */
function oneWritePlan(planned: Planned): PaymentPlan | undefined {
  return planned.plan?.effect === 'keep' ? planned.plan : undefined
}

export function createSingleWrite(deps: { db: Database, clock: Clock, processor: Processor }): CreateInOneWrite {
  const { db, clock, processor } = deps
  const kysely = db.kysely
  const sqlite = db.sqlite
  const answerOf = (plan: PaymentPlan, pending: PendingAnswer) => pending.record(201, { data: plan.response })

  if (!sqlite) {
    return async (ctx, input, pending) => {
      const { mandate, endpoints } = await readForPayment(kysely, ctx.accountId, input.mandate_id)
      const plan = oneWritePlan(planPayment({ ctx, input, mandate, endpoints, processor, now: clock.now() }))
      if (!plan) return undefined
      const record = answerOf(plan, pending)
      try {
        const { saved } = await writePlan(kysely, plan, record).execute(kysely).then((r) => r.rows[0]!)
        return Number(saved) === 1 ? record : undefined
      } catch (error) {
        // The key was finished by another process since the replay check: the general path replays it.
        if (records.keyTaken(error)) return undefined
        throw error
      }
    }
  }

  const group = createGroupCommit({ kysely, sqlite })
  return async (ctx, input, pending) => {
    try {
      return await group.submit((exec) => {
        const mandate = exec.all(mandates.findMandateQuery(kysely, ctx.accountId, input.mandate_id))[0]
        const endpoints = exec.all(kysely.selectFrom('webhook_endpoints').select(['id', 'events'])
          .where('account_id', '=', ctx.accountId).where('status', '=', 'enabled'))
        const plan = oneWritePlan(planPayment({ ctx, input, mandate, endpoints, processor, now: clock.now() }))
        if (!plan) return undefined
        // The read above decided within this same synchronous section, so the hold cannot refuse here; it
        // stays the authority all the same, as everywhere else money moves.
        if (exec.run(mandates.holdQuery(kysely, plan.hold)) === 0) return undefined
        const record = answerOf(plan, pending)
        exec.run(records.insertNew(kysely, record))
        exec.run(kysely.insertInto('payments').values(plan.payment))
        exec.run(kysely.insertInto('events').values(plan.events))
        for (const batch of inBatches(plan.jobs)) exec.run(kysely.insertInto('jobs').values(batch))
        return record
      })
    } catch (error) {
      // A record under the key, live or expired: this piece rolled back alone; the general path decides.
      if (records.keyTaken(error)) return undefined
      throw error
    }
  }
}

/** The mandate and the account's enabled webhook endpoints, in one round trip (PostgreSQL). */
async function readForPayment(kysely: Kysely<DatabaseSchema>, accountId: string, mandateId: string) {
  const row = await kysely.selectNoFrom((eb) => [
    eb.selectFrom('mandates').select((m) => sql<mandates.MandateRow>`row_to_json(${m.table('mandates')})`.as('mandate'))
      .where('account_id', '=', accountId).where('id', '=', mandateId)
      .as('mandate'),
    eb.selectFrom('webhook_endpoints')
      .select(sql<{ id: string, events: string }[]>`coalesce(json_agg(json_build_object('id', id, 'events', events)), '[]'::json)`.as('endpoints'))
      .where('account_id', '=', accountId).where('status', '=', 'enabled')
      .as('endpoints'),
  ]).executeTakeFirstOrThrow()
  return { mandate: row.mandate ?? undefined, endpoints: row.endpoints ?? [] }
}

/**
 * The plan as one statement, so one transaction and one round trip. The hold decides: the idempotency
 * record is inserted only if it took effect, and the rest only if the record was. A record under the
 * key fails the insert with a unique violation (its conflict rule, idempotency/repository.ts), and with
 * it the whole statement.
 */
function writePlan(kysely: Kysely<DatabaseSchema>, plan: PaymentPlan, record: IdempotencyRecord): RawBuilder<{ saved: number }> {
  const steps = [
    sql`held as (${mandates.holdQuery(kysely, plan.hold).returning('id')})`,
    sql`saved as (${records.insertNewAfter(record, 'held')} returning 1)`,
    sql`payment as (${insertRowsAfter('payments', [plan.payment], 'saved')})`,
    sql`event as (${insertRowsAfter('events', plan.events, 'saved')})`,
  ]
  if (plan.jobs.length > 0) steps.push(sql`job as (${insertRowsAfter('jobs', plan.jobs, 'saved')})`)
  return sql<{ saved: number }>`with ${sql.join(steps)} select (select count(*) from saved) as saved`
}
