import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { isUniqueViolation } from '../../db/errors.js'
import { createGroupCommit } from '../../db/group-commit.js'
import type { DatabaseSchema } from '../../db/schema.js'
import { inBatches } from '../../jobs/queue.js'
import type { Clock } from '../../lib/clock.js'
import type { RequestContext } from '../../lib/request-context.js'
import type { IdempotencyRecord } from '../idempotency/repository.js'
import * as mandates from '../mandates/repository.js'
import { type PaymentPlan, planPayment } from './plan.js'
import type { Processor } from './processors/processor.js'
import type { CreatePaymentInput, Payment } from './schemas.js'

/**
 * Creates a common payment, with its idempotency record, in a single write: on PostgreSQL one
 * statement after one read, on SQLite a piece of a group commit. Answers undefined, having written
 * nothing, whenever the general path must decide (a refusal, a declined charge, a single-use mandate,
 * a key that is not new); the general path then does all of it again from the start.
 */
export type CreateInOneWrite = (
  ctx: RequestContext,
  input: CreatePaymentInput,
  recordOf: (payment: Payment) => IdempotencyRecord,
) => Promise<IdempotencyRecord | undefined>

export function createSingleWrite(deps: { db: Database, clock: Clock, processor: Processor }): CreateInOneWrite {
  const { db, clock, processor } = deps
  const kysely = db.kysely
  const sqlite = db.sqlite

  if (!sqlite) {
    return async (ctx, input, recordOf) => {
      const { mandate, endpoints } = await readForPayment(kysely, ctx.accountId, input.mandate_id)
      const plan = planPayment({ ctx, input, mandate, endpoints, processor, now: clock.now(), recordOf })
      if (!plan) return undefined
      try {
        const { saved } = await writePlan(kysely, plan).execute(kysely).then((r) => r.rows[0]!)
        return Number(saved) === 1 ? plan.record : undefined
      } catch (error) {
        // The key was finished by another process since the replay check: the general path replays it.
        if (isUniqueViolation(error)) return undefined
        throw error
      }
    }
  }

  const group = createGroupCommit({ kysely, sqlite })
  return (ctx, input, recordOf) => group.submit((exec) => {
    const mandate = exec.all(mandates.findMandateQuery(kysely, ctx.accountId, input.mandate_id))[0]
    const endpoints = exec.all(kysely.selectFrom('webhook_endpoints').select(['id', 'events'])
      .where('account_id', '=', ctx.accountId).where('status', '=', 'enabled'))
    const plan = planPayment({ ctx, input, mandate, endpoints, processor, now: clock.now(), recordOf })
    if (!plan) return undefined
    // The read above decided within this same synchronous section, so the hold cannot refuse here; it
    // stays the authority all the same, as everywhere else money moves.
    if (exec.run(mandates.holdQuery(kysely, plan.hold).where('usage', '=', 'multi_use')) === 0) return undefined
    if (exec.run(kysely.insertInto('idempotency_keys').values(plan.record).onConflict((oc) => oc.doNothing())) === 0) return undefined
    exec.run(kysely.insertInto('payments').values(plan.payment))
    exec.run(kysely.insertInto('events').values(plan.events))
    for (const batch of inBatches(plan.jobs)) exec.run(kysely.insertInto('jobs').values(batch))
    return plan.record
  })
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

/** `insert into <table> select … from json_populate_recordset(…)`: typed by the table itself. */
function insertRows(table: keyof DatabaseSchema, rows: object[], when: string): RawBuilder<unknown> {
  const columns = sql.join(Object.keys(rows[0]!).map((column) => sql.ref(column)))
  return sql`insert into ${sql.table(table)} (${columns})
    select ${columns} from json_populate_recordset(null::${sql.table(table)}, ${JSON.stringify(rows)}::json)
    where exists (select 1 from ${sql.table(when)})`
}

/**
 * The plan as one statement, so one transaction and one round trip. The hold decides: the idempotency
 * record is inserted only if it took effect, and the rest only if the record was. A live record under
 * the key fails the insert with a unique violation, and with it the whole statement.
 */
function writePlan(kysely: Kysely<DatabaseSchema>, plan: PaymentPlan): RawBuilder<{ saved: number }> {
  const steps = [
    sql`held as (${mandates.holdQuery(kysely, plan.hold).where('usage', '=', 'multi_use').returning('id')})`,
    sql`saved as (${insertRows('idempotency_keys', [plan.record], 'held')} returning 1)`,
    sql`payment as (${insertRows('payments', [plan.payment], 'saved')})`,
    sql`event as (${insertRows('events', plan.events, 'saved')})`,
  ]
  if (plan.jobs.length > 0) steps.push(sql`job as (${insertRows('jobs', plan.jobs, 'saved')})`)
  return sql<{ saved: number }>`with ${sql.join(steps)} select (select count(*) from saved) as saved`
}
