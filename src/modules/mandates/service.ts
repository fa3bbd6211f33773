import type { Database, Executor } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { errors, FieldErrors } from '../../lib/errors.js'
import { listPage } from '../../lib/paging.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { toMinorUnits } from '../../lib/currency.js'
import { newId } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import { recordEvent, recordEvents } from '../events/outbox.js'
import { findAgent } from '../agents/repository.js'
import { findWishForUpdate } from '../wishes/repository.js'
import { effectiveStatus as wishStatus, isTerminal, type WishStatus } from '../wishes/transitions.js'
import * as repo from './repository.js'
import { effectiveMandateStatus } from './rules.js'
import { AP2_DECIDED_MEMBERS, type CreateMandateInput, type ListMandatesInput, type Mandate, type MandateAp2 } from './schemas.js'
import type { VerifiedOpenMandate } from '../ap2/open-mandate.js'
import { isUniqueViolation } from '../../db/errors.js'

export function toMandate(row: repo.MandateRow, now: string): Mandate {
  return {
    id: row.id,
    protocol: row.protocol as Mandate['protocol'],
    status: effectiveMandateStatus(row, now),
    wish_id: row.wish_id,
    agent_id: row.agent_id,
    currency: row.currency,
    max_amount: row.max_amount,
    budget_amount: row.budget_amount,
    amount_used: row.amount_used,
    usage: row.usage as Mandate['usage'],
    uses_count: row.uses_count,
    expires_at: row.expires_at,
    not_before: row.not_before,
    metadata: JSON.parse(row.metadata) as Mandate['metadata'],
    created_at: row.created_at,
    updated_at: row.updated_at,
    revoked_at: row.revoked_at,
    ap2: row.ap2 === null ? null : { ...(JSON.parse(row.ap2) as MandateAp2), last_payment_at: row.last_payment_at },
  }
}

/**
 * Revokes the active mandates of wishes that became final (cancelled, fulfilled, expired) or were
 * deleted, in the transaction that made the wish so, each with the mandate.revoked event the revoke
 * route writes. Every later payment on them is refused (mandate_revoked) by the hold's own condition.
 */
export async function revokeMandatesOfWishes(trx: Executor, accountId: string, wishIds: string[], requestId: string | null, now: string): Promise<Mandate[]> {
  const rows = await repo.revokeForWishes(trx, accountId, wishIds, now)
  if (rows.length === 0) return []
  const revoked = rows.sort((a, b) => (a.id < b.id ? -1 : 1)).map((row) => toMandate(row, now))
  await recordEvents(trx, revoked.map((mandate) => ({ accountId, type: 'mandate.revoked' as const, object: mandate, requestId, createdAt: now })))
  return revoked
}

/** The terms a mandate is made with: from the request, or from a verified AP2 open mandate. */
interface MandateTerms {
  protocol: CreateMandateInput['protocol']
  max_amount: number
  budget_amount: number
  currency: string | undefined
  usage: 'single_use' | 'multi_use'
  expires_at: Date
  not_before: Date | null
  wish_id: string | undefined
  agent_id: string | undefined
  metadata: Record<string, unknown>
  /** The AP2 columns (migration 0009); undefined for a plain mandate. */
  ap2?: Pick<repo.MandateRow, 'min_amount' | 'max_uses' | 'recurrence_frequency' | 'ap2_open_hash' | 'ap2'>
}

/** What the mandate service needs of the trusted-key service: the AP2 open mandate verifier. */
export type VerifyOpenMandate = (accountId: string, token: string) => Promise<VerifiedOpenMandate>

/** The terms of a plain mandate, as sent (the route applied withMandateDefaults). */
function requestTerms(input: CreateMandateInput): MandateTerms {
  const problems = new FieldErrors()
  if (input.max_amount === undefined) problems.missing('max_amount', 'max_amount is required (or ap2.open_payment_mandate)')
  if (input.expires_at === undefined) problems.missing('expires_at', 'expires_at is required (or ap2.open_payment_mandate)')
  problems.throwIfAny()
  return {
    protocol: input.protocol,
    max_amount: input.max_amount!,
    budget_amount: input.budget_amount ?? input.max_amount!,
    currency: input.currency,
    usage: input.usage ?? 'single_use',
    expires_at: new Date(input.expires_at!),
    not_before: input.not_before ? new Date(input.not_before) : null,
    wish_id: input.wish_id,
    agent_id: input.agent_id,
    metadata: input.metadata ?? {},
  }
}

/** The terms of an AP2 mandate: the open mandate's constraints (ap2/constraints.ts); nothing else may set them. */
function openMandateTerms(input: CreateMandateInput, verified: VerifiedOpenMandate): MandateTerms {
  const problems = new FieldErrors()
  if (input.protocol !== 'ap2') problems.invalid('protocol', 'A mandate made from an AP2 open mandate has protocol ap2')
  for (const member of AP2_DECIDED_MEMBERS) {
    if (input[member] !== undefined) problems.invalid(member, `${member} comes from ap2.open_payment_mandate and may not be sent with it`)
  }
  problems.throwIfAny()
  const { draft } = verified
  const ap2: MandateAp2 = {
    open_mandate_hash: verified.issuer_jwt_hash,
    presentation_hash: verified.presentation_hash,
    issuer: verified.issuer,
    cnf_jwk: draft.cnf_jwk as Record<string, string>,
    min_amount: draft.min_amount,
    recurrence: draft.recurrence,
    allowed_payees: draft.allowed_payees,
    allowed_payment_instruments: draft.allowed_payment_instruments,
    payment_reference: draft.payment_reference,
    issued_at: verified.issued_at,
    last_payment_at: null,
  }
  return {
    protocol: 'ap2',
    max_amount: draft.max_amount,
    budget_amount: draft.budget_amount,
    currency: draft.currency,
    usage: draft.usage,
    expires_at: new Date(draft.expires_at),
    not_before: draft.not_before === null ? null : new Date(draft.not_before),
    wish_id: input.wish_id,
    agent_id: input.agent_id,
    metadata: input.metadata ?? {},
    ap2: {
      min_amount: draft.min_amount,
      max_uses: draft.max_uses,
      // Only a frequency with a window restricts (ON_DEMAND has none), so only that is a column the hold reads.
      recurrence_frequency: draft.recurrence?.window ? draft.recurrence.frequency : null,
      ap2_open_hash: verified.issuer_jwt_hash,
      ap2: JSON.stringify(ap2),
    },
  }
}

/** Whether two public JWKs are the same key (their key members). */
const sameKey = (a: Record<string, unknown>, b: Record<string, unknown>) => ['kty', 'crv', 'x', 'y'].every((m) => a[m] === b[m])

export function createMandateService(deps: { db: Database, clock: Clock, verifyOpenMandate?: VerifyOpenMandate }) {
  const { db, clock } = deps

  async function insert(ctx: RequestContext, terms: MandateTerms): Promise<Mandate> {
    const problems = new FieldErrors()
    const expiresAt = terms.expires_at
    if (!(expiresAt > clock.now())) problems.invalid('expires_at', 'expires_at must be in the future')
    const notBefore = terms.not_before
    if (notBefore && !(notBefore < expiresAt)) problems.invalid('not_before', 'not_before must be before expires_at')
    problems.throwIfAny()

    return inTransaction(db, ctx, async (trx) => {
      let currency = terms.currency
      const budgetAmount = terms.budget_amount
      let deadline = toTimestamp(expiresAt)
      // The wish is locked until commit: a cancel, delete or budget cut waits for this mandate and
      // then revokes it (or sees its budget), and this check sees the wish as last committed.
      const wish = terms.wish_id === undefined ? undefined : await findWishForUpdate(trx, ctx.accountId, terms.wish_id)
      // Time is read once the wish is locked, so that timestamps follow the order the lock imposes.
      const nowDate = clock.now()
      const now = toTimestamp(nowDate)
      if (terms.wish_id !== undefined) {
        const status = wish ? wishStatus(wish.status as WishStatus, wish.expires_at, now) : undefined
        if (!wish || isTerminal(status!)) {
          throw errors.payment('wish_not_usable', wish ? `The wish is ${status}` : `No such wish: '${terms.wish_id}'`, 'wish_id')
        }
        if (wish.protocol !== terms.protocol) {
          throw errors.payment('protocol_mismatch', `The wish uses ${wish.protocol}; the mandate must too`, 'protocol')
        }
        if (wish.budget_currency !== null) {
          if (currency !== undefined && currency !== wish.budget_currency) {
            throw errors.payment('currency_mismatch', `The wish's budget is in ${wish.budget_currency}`, 'currency')
          }
          currency = wish.budget_currency
          if (wish.budget_max !== null && budgetAmount > toMinorUnits(wish.budget_max, currency)) {
            throw errors.payment('wish_budget_exceeded',
              `budget_amount exceeds the wish's budget of ${wish.budget_max} ${currency} (${toMinorUnits(wish.budget_max, currency)} in minor units)`,
              'budget_amount')
          }
        }
        // A mandate never outlives its wish (docs/decisions.md): its deadline is the earlier of the two.
        if (wish.expires_at !== null && wish.expires_at < deadline) {
          deadline = wish.expires_at
          if (notBefore && !(toTimestamp(notBefore) < deadline)) {
            throw errors.parameterInvalid('not_before', `not_before must be before the wish's expires_at (${deadline}), which is also the mandate's`)
          }
        }
      }
      if (terms.agent_id !== undefined) {
        const agent = await findAgent(trx, ctx.accountId, terms.agent_id)
        if (!agent || agent.status !== 'active') {
          throw errors.payment('agent_not_usable', agent ? 'The agent is disabled' : `No such agent: '${terms.agent_id}'`, 'agent_id')
        }
        // An agent registered with a key is the holder of that key: an AP2 mandate must bind the same one.
        const cnf = terms.ap2 ? (JSON.parse(terms.ap2.ap2!) as MandateAp2).cnf_jwk : undefined
        if (cnf && agent.public_jwk !== null && !sameKey(JSON.parse(agent.public_jwk) as Record<string, unknown>, cnf)) {
          throw errors.ap2MandateRefused('cnf_invalid', 'The open mandate\'s cnf.jwk is not the key registered for this agent', 'agent_id')
        }
      }
      if (terms.ap2 && await repo.findByOpenHash(trx, ctx.accountId, terms.ap2.ap2_open_hash!)) {
        throw errors.ap2MandateRefused('mandate_replayed', 'This open mandate has already been made into a mandate of this account', 'ap2.open_payment_mandate')
      }
      const row: repo.MandateRow = {
        id: newId('mdt', nowDate),
        account_id: ctx.accountId,
        protocol: terms.protocol,
        status: 'active',
        wish_id: terms.wish_id ?? null,
        agent_id: terms.agent_id ?? null,
        currency: currency ?? 'USD',
        max_amount: terms.max_amount,
        budget_amount: budgetAmount,
        amount_used: 0,
        usage: terms.usage,
        uses_count: 0,
        expires_at: deadline,
        not_before: notBefore ? toTimestamp(notBefore) : null,
        metadata: JSON.stringify(terms.metadata),
        created_at: now,
        updated_at: now,
        revoked_at: null,
        min_amount: null,
        max_uses: null,
        recurrence_frequency: null,
        last_payment_at: null,
        ap2_open_hash: null,
        ap2: null,
        ...terms.ap2,
      }
      const mandate = toMandate(row, now)
      try {
        await repo.insertMandate(trx, row)
      } catch (error) {
        // The same open mandate, registered by a concurrent request since the check above.
        if (terms.ap2 && isUniqueViolation(error)) {
          throw errors.ap2MandateRefused('mandate_replayed', 'This open mandate has already been made into a mandate of this account', 'ap2.open_payment_mandate')
        }
        throw error
      }
      await recordEvent(trx, { accountId: ctx.accountId, type: 'mandate.created', object: mandate, requestId: ctx.requestId, createdAt: now })
      return mandate
    })
  }

  return {
    async create(ctx: RequestContext, input: CreateMandateInput): Promise<Mandate> {
      if (input.ap2 === undefined) return insert(ctx, requestTerms(input))
      if (!deps.verifyOpenMandate) throw new Error('AP2 open mandates need the trusted-key verifier')
      // Verified before the transaction: the signature check needs no lock, and the token never changes.
      const verified = await deps.verifyOpenMandate(ctx.accountId, input.ap2.open_payment_mandate)
      return insert(ctx, openMandateTerms(input, verified))
    },

    async get(ctx: RequestContext, id: string): Promise<Mandate> {
      const row = await repo.findMandate(db.kysely, ctx.accountId, id, ctx.agentId)
      if (!row) throw errors.resourceMissing('mandate', id)
      return toMandate(row, toTimestamp(clock.now()))
    },

    async list(ctx: RequestContext, input: ListMandatesInput) {
      const now = toTimestamp(clock.now())
      // An agent key lists only the mandates granted to its agent, whatever agent_id it asks for.
      const agentId = ctx.agentId ?? input.agent_id
      const filter = { accountId: ctx.accountId, status: input.status, wishId: input.wish_id, now, agentId }
      const none = ctx.agentId !== undefined && input.agent_id !== undefined && input.agent_id !== ctx.agentId
      return listPage(input, {
        resource: 'mandate',
        // A cursor is one of the mandates this key may read, whatever agent_id asks for.
        find: (id) => repo.findMandate(db.kysely, ctx.accountId, id, ctx.agentId),
        rows: async (window) => (none ? [] : repo.listMandates(db.kysely, filter, window)),
        total: async () => (none ? 0 : repo.countMandates(db.kysely, filter)),
        map: (row) => toMandate(row, now),
      })
    },

    async revoke(ctx: RequestContext, id: string): Promise<Mandate> {
      const now = toTimestamp(clock.now())
      return inTransaction(db, ctx, async (trx) => {
        const revoked = await repo.revoke(trx, ctx.accountId, id, now)
        if (!revoked) {
          const row = await repo.findMandate(trx, ctx.accountId, id)
          if (!row) throw errors.resourceMissing('mandate', id)
          throw errors.invalidStateTransition(`The mandate is ${effectiveMandateStatus(row, now)}; only an active mandate can be revoked`)
        }
        const mandate = toMandate(revoked, now)
        await recordEvent(trx, { accountId: ctx.accountId, type: 'mandate.revoked', object: mandate, requestId: ctx.requestId, createdAt: now })
        return mandate
      })
    },
  }
}

export type MandateService = ReturnType<typeof createMandateService>
