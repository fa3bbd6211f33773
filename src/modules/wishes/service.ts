import type { Config } from '../../config.js'
import type { Database, Executor } from '../../db/database.js'
import { compiled } from '../../db/query-template.js'
import { createStatementBatch } from '../../db/statement-batch.js'
import { errors, FieldErrors } from '../../lib/errors.js'
import { listPage } from '../../lib/paging.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { fitsMinorUnit } from '../../lib/currency.js'
import { newId } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import { eventRows, outboxStatements, recordEvent } from '../events/outbox.js'
import { enabledEndpoints } from '../webhooks/repository.js'
import { inTransaction } from '../../db/transaction.js'
import { findAgent } from '../agents/repository.js'
import { capExpiryForWish as capMandateExpiry, expireDue as expireDueMandates } from '../mandates/repository.js'
import { revokeMandatesOfWishes, toMandate } from '../mandates/service.js'
import * as repo from './repository.js'
import { adjustWishCounts, countWishes, type CountChanges } from './repository.js'
import type { CreateWishInput, ListWishesInput, UpdateWishInput, Wish } from './schemas.js'
import { allowedTransitions, canTransition, effectiveStatus, isTerminal, type WishStatus } from './transitions.js'

export interface WishServiceDeps {
  db: Database
  clock: Clock
  config: Pick<Config, 'defaultProtocol'>
}

type MetadataValue = Wish['metadata'][string]
type Metadata = Record<string, MetadataValue>
type BudgetInput = { max?: number | undefined, currency?: string | undefined } | null | undefined

export function toWish(row: repo.WishRow, now: string): Wish {
  return {
    id: row.id,
    status: effectiveStatus(row.status as WishStatus, row.expires_at, now),
    query: row.query,
    budget: row.budget_currency === null ? null : { max: row.budget_max, currency: row.budget_currency },
    protocol: row.protocol as Wish['protocol'],
    category: row.category,
    metadata: JSON.parse(row.metadata) as Metadata,
    expires_at: row.expires_at,
    // Present only once assigned: accounts that use no agents see the wish as it always was.
    ...(row.agent_id === null ? {} : { agent_id: row.agent_id }),
    created_at: row.created_at,
    updated_at: row.updated_at,
  }
}

/** Checks a budget and returns its stored columns; null or absent clears it. */
function budgetColumns(budget: BudgetInput, problems: FieldErrors): Pick<repo.WishRow, 'budget_max' | 'budget_currency'> {
  if (budget === null || budget === undefined) return { budget_max: null, budget_currency: null }
  // The schema has refused unknown codes and upper-cased the rest.
  const currency = budget.currency ?? 'USD'
  if (budget.max !== undefined && !fitsMinorUnit(budget.max, currency)) {
    problems.invalid('budget.max', `budget.max has more decimal places than ${currency} allows`)
  }
  return { budget_max: budget.max ?? null, budget_currency: currency }
}

function futureTimestamp(value: string | null | undefined, now: Date, problems: FieldErrors): string | null {
  if (value === null || value === undefined) return null
  const at = new Date(value)
  if (Number.isNaN(at.getTime()) || at.getUTCFullYear() > 9999) {
    problems.invalid('expires_at', 'expires_at must be a valid ISO 8601 timestamp')
    return null
  }
  if (at <= now) problems.invalid('expires_at', 'expires_at must be in the future')
  return toTimestamp(at)
}

/** Merges a metadata patch: keys set to null are removed; a null patch clears everything. */
function mergeMetadata(current: Metadata, patch: Record<string, MetadataValue | null> | null): Metadata {
  if (patch === null) return {}
  const merged = new Map(Object.entries(current))
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) merged.delete(key)
    else merged.set(key, value)
  }
  if (merged.size > 50) throw errors.parameterInvalid('metadata', 'metadata may have at most 50 keys')
  // fromEntries defines own properties, so a key like "__proto__" can never reach a prototype.
  return Object.fromEntries(merged)
}

function sameMetadata(a: Metadata, b: Metadata): boolean {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k])
}

/**
 * The expiry sweep's work (src/jobs/expiry.ts schedules it). Stores `expired` on up to `limit` wishes,
 * and up to `limit` mandates, whose time has passed, with their events (a wish's is wish.updated: the
 * contract has no wish.expired), and revokes any mandate still active on a lapsed wish, all in one
 * transaction. Readers already see them expired; this makes the status and the event stream agree. The
 * updates are conditional, so processes sweeping at once never expire, or announce, one object twice.
 */
export function createWishExpiry(deps: { db: Database, clock: Clock }) {
  const { db, clock } = deps
  return {
    /** One batch; returns the larger of the numbers of wishes and mandates it expired. */
    expireLapsed(limit: number): Promise<number> {
      return db.kysely.transaction().execute(async (trx) => {
        const now = toTimestamp(clock.now())
        const lapsedWishes: repo.WishRow[] = []
        const moved = new Map<string, CountChanges>()
        for (const { row, was } of await repo.expireDue(trx, now, limit)) {
          lapsedWishes.push(row)
          const changes = moved.get(row.account_id) ?? {}
          changes[was] = (changes[was] ?? 0) - 1
          changes.expired = (changes.expired ?? 0) + 1
          moved.set(row.account_id, changes)
        }
        // Accounts in order, like the counters within one: counter locks are always taken in one order.
        for (const accountId of [...moved.keys()].sort()) await adjustWishCounts(trx, accountId, moved.get(accountId)!)
        for (const row of lapsedWishes) {
          await recordEvent(trx, { accountId: row.account_id, type: 'wish.updated', object: toWish(row, now), requestId: null, createdAt: now })
        }
        // A lapsed wish takes its mandates with it, as a cancelled one does. A mandate made since
        // mandates were capped at their wish's deadline has lapsed with it and is expired below
        // instead; this catches those that outlived their wish (older data).
        for (const accountId of [...moved.keys()].sort()) {
          const ids = lapsedWishes.filter((row) => row.account_id === accountId).map((row) => row.id)
          await revokeMandatesOfWishes(trx, accountId, ids, null, now)
        }
        const lapsedMandates = await expireDueMandates(trx, now, limit)
        for (const row of lapsedMandates) {
          await recordEvent(trx, { accountId: row.account_id, type: 'mandate.expired', object: toMandate(row, now), requestId: null, createdAt: now })
        }
        return Math.max(lapsedWishes.length, lapsedMandates.length)
      })
    },
  }
}

export function createWishService(deps: WishServiceDeps) {
  const { db, clock, config } = deps
  // PostgreSQL's group commit for new wishes. Without prepared statements the batch would run each wish
  // alone, a round trip a statement, which is what the transaction path does already.
  const wishBatch = db.postgres?.prepares === true ? createStatementBatch(db.postgres) : undefined

  return {
    ...createWishExpiry(deps),

    async create(ctx: RequestContext, input: CreateWishInput): Promise<Wish> {
      const now = clock.now()
      const stamp = toTimestamp(now)
      const query = input.query.trim()
      const protocol = !input.protocol || input.protocol === 'auto' ? config.defaultProtocol : input.protocol
      const problems = new FieldErrors()
      const row: repo.WishRow = {
        id: newId('wish', now),
        account_id: ctx.accountId,
        status: 'active',
        query,
        ...budgetColumns(input.budget, problems),
        protocol,
        category: input.category ?? null,
        metadata: JSON.stringify(mergeMetadata({}, input.metadata ?? {})),
        expires_at: futureTimestamp(input.expires_at, now, problems),
        agent_id: null,
        created_at: stamp,
        updated_at: stamp,
      }
      problems.throwIfAny()
      const wish = toWish(row, stamp)
      const events = eventRows([{ accountId: ctx.accountId, type: 'wish.created', object: wish, requestId: ctx.requestId, createdAt: stamp }])
      const slot = repo.countSlot()
      /** Every row the creation writes, whichever way it runs. */
      const writes = (trx: Executor, endpoints: Awaited<ReturnType<typeof enabledEndpoints>>) => [
        compiled(repo.insertWishStatement(trx, row)),
        repo.wishCountsStatement(trx, ctx.accountId, { active: 1 }, slot)!,
        ...outboxStatements(trx, events, () => endpoints),
      ]
      if (ctx.transaction === undefined && wishBatch !== undefined) {
        // PostgreSQL, no idempotency key: the statements in one transaction shared with other wishes
        // (db/statement-batch.ts), which take their counter rows in the order of (account, slot).
        await wishBatch.run(writes(db.kysely, await enabledEndpoints(db.kysely, ctx.accountId)), `${ctx.accountId} ${slot}`)
      } else {
        await inTransaction(db, ctx, async (trx) => {
          for (const statement of writes(trx, await enabledEndpoints(trx, ctx.accountId))) await trx.executeQuery(statement)
        })
      }
      return wish
    },

    async get(ctx: RequestContext, id: string): Promise<Wish> {
      const row = await repo.findWish(db.kysely, ctx.accountId, id)
      if (!row) throw errors.resourceMissing('wish', id)
      return toWish(row, toTimestamp(clock.now()))
    },

    async list(ctx: RequestContext, input: ListWishesInput) {
      const now = toTimestamp(clock.now())
      const filter = { accountId: ctx.accountId, status: input.status, now }
      return listPage(input, {
        resource: 'wish',
        find: (id) => repo.findWish(db.kysely, ctx.accountId, id),
        rows: (window) => repo.listWishes(db.kysely, filter, window),
        total: () => countWishes(db.kysely, filter),
        map: (row) => toWish(row, now),
      })
    },

    /**
     * Partial update. Only members that actually change count: an unchanged wish keeps its
     * updated_at and writes no event. Terminal wishes accept metadata changes only.
     */
    async update(ctx: RequestContext, id: string, input: UpdateWishInput): Promise<Wish> {
      // Validate everything that does not depend on the stored wish before taking a lock.
      const problems = new FieldErrors()
      const query = input.query?.trim()
      const budget = input.budget !== undefined ? budgetColumns(input.budget, problems) : undefined
      const expiresAt = input.expires_at !== undefined ? futureTimestamp(input.expires_at, clock.now(), problems) : undefined
      problems.throwIfAny()

      return inTransaction(db, ctx, async (trx) => {
        const row = await repo.findWishForUpdate(trx, ctx.accountId, id)
        if (!row) throw errors.resourceMissing('wish', id)
        // Time is read once the wish is locked, so that timestamps follow the order the lock imposes.
        const now = toTimestamp(clock.now())
        const current = effectiveStatus(row.status as WishStatus, row.expires_at, now)
        const changes: repo.WishChanges = {}

        if (query !== undefined && query !== row.query) changes.query = query
        if (budget !== undefined && (budget.budget_max !== row.budget_max || budget.budget_currency !== row.budget_currency)) {
          Object.assign(changes, budget)
        }
        if (input.category !== undefined && input.category !== row.category) changes.category = input.category
        if (expiresAt !== undefined && expiresAt !== row.expires_at) changes.expires_at = expiresAt
        if (input.status !== undefined && input.status !== current) {
          if (!canTransition(current, input.status)) {
            const allowed = allowedTransitions(current)
            throw errors.invalidStateTransition(
              allowed.length === 0
                ? `The wish is ${current}, a final status: it cannot become ${input.status}`
                : `A wish that is ${current} can become ${allowed.join(', ')}; not ${input.status}`,
              'status',
            )
          }
          changes.status = input.status
        }
        if (input.agent_id !== undefined && input.agent_id !== row.agent_id) {
          if (input.agent_id !== null) {
            const agent = await findAgent(trx, ctx.accountId, input.agent_id)
            if (!agent || agent.status !== 'active') {
              throw errors.payment('agent_not_usable', agent ? 'The agent is disabled' : `No such agent: '${input.agent_id}'`, 'agent_id')
            }
            // A pending wish was waiting for an agent: assigned one, it is active (a status sent along wins).
            if (current === 'pending' && input.status === undefined) changes.status = 'active'
          }
          changes.agent_id = input.agent_id
        }
        if (isTerminal(current) && changes.status === undefined) {
          const blocked = Object.keys(changes)[0]
          if (blocked !== undefined) {
            throw errors.invalidStateTransition(`The wish is ${current}: only metadata can change`, blocked.startsWith('budget') ? 'budget' : blocked)
          }
        }
        if (input.metadata !== undefined) {
          const stored = JSON.parse(row.metadata) as Metadata
          const merged = mergeMetadata(stored, input.metadata)
          if (!sameMetadata(stored, merged)) changes.metadata = JSON.stringify(merged)
        }

        if (Object.keys(changes).length === 0) return toWish(row, now)
        // A wish that lapsed on its own has its expiry stored along with whatever else changes.
        if (changes.status === undefined && current !== row.status) changes.status = current
        changes.updated_at = now
        const updated = { ...row, ...changes }
        const wish = toWish(updated, now)
        await repo.updateWish(trx, ctx.accountId, id, changes)
        if (updated.status !== row.status) await adjustWishCounts(trx, ctx.accountId, { [row.status]: -1, [updated.status]: 1 })
        await recordEvent(trx, { accountId: ctx.accountId, type: 'wish.updated', object: wish, requestId: ctx.requestId, createdAt: now })
        if (updated.status !== row.status && isTerminal(updated.status as WishStatus)) {
          // A final wish takes its mandates with it: no payment on them after this commits.
          await revokeMandatesOfWishes(trx, ctx.accountId, [id], ctx.requestId, now)
        } else if (changes.expires_at != null) {
          // No mandate outlives its wish (docs/decisions.md).
          await capMandateExpiry(trx, ctx.accountId, id, changes.expires_at, now)
        }
        return wish
      })
    },

    async remove(ctx: RequestContext, id: string): Promise<void> {
      await inTransaction(db, ctx, async (trx) => {
        const row = await repo.findWishForUpdate(trx, ctx.accountId, id)
        if (!row) throw errors.resourceMissing('wish', id)
        const now = toTimestamp(clock.now())
        await repo.deleteWish(trx, ctx.accountId, id)
        await adjustWishCounts(trx, ctx.accountId, { [row.status]: -1 })
        await recordEvent(trx, { accountId: ctx.accountId, type: 'wish.deleted', object: toWish(row, now), requestId: ctx.requestId, createdAt: now })
        await revokeMandatesOfWishes(trx, ctx.accountId, [id], ctx.requestId, now)
      })
    },
  }
}

export type WishService = ReturnType<typeof createWishService>
