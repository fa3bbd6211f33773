import type { Database } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { errors } from '../../lib/errors.js'
import { newId } from '../../lib/ids.js'
import { listPage } from '../../lib/paging.js'
import type { RequestContext } from '../../lib/request-context.js'
import type { AccountService, CreatedKey } from '../accounts/service.js'
import { recordEvent } from '../events/outbox.js'
import * as repo from './repository.js'
import type { Agent, CreateAgentInput, ListAgentsInput, PublicJwkValue } from './schemas.js'

export function toAgent(row: repo.AgentRow): Agent {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    metadata: JSON.parse(row.metadata) as Agent['metadata'],
    public_jwk: row.public_jwk === null ? null : JSON.parse(row.public_jwk) as PublicJwkValue,
    created_at: row.created_at,
    updated_at: row.updated_at,
  }
}

/** The pairs a public JWK may have: EC keys on P-256 with both coordinates, OKP keys on Ed25519 with x only. */
function jwkProblem(jwk: PublicJwkValue): string | undefined {
  if (jwk.kty === 'EC') {
    if (jwk.crv !== 'P-256') return 'an EC key must be on crv P-256'
    if (jwk.y === undefined) return 'an EC key needs y'
    if (jwk.alg !== undefined && jwk.alg !== 'ES256') return 'an EC P-256 key signs with alg ES256'
  } else {
    if (jwk.crv !== 'Ed25519') return 'an OKP key must be on crv Ed25519'
    if (jwk.y !== undefined) return 'an OKP key has no y'
    if (jwk.alg !== undefined && jwk.alg !== 'EdDSA') return 'an Ed25519 key signs with alg EdDSA'
  }
  return undefined
}

/** A request of an agent key is about the agent itself only through its mandates and payments. */
export function createAgentService(deps: { db: Database, clock: Clock, accounts: Pick<AccountService, 'createAgentKey' | 'forgetCachedKeys'> }) {
  const { db, clock, accounts } = deps

  return {
    async create(ctx: RequestContext, input: CreateAgentInput): Promise<Agent> {
      if (input.public_jwk) {
        const problem = jwkProblem(input.public_jwk)
        if (problem) throw errors.parameterInvalid('public_jwk', `public_jwk: ${problem}`)
      }
      return inTransaction(db, ctx, async (trx) => {
        const nowDate = clock.now()
        const now = toTimestamp(nowDate)
        const row: repo.AgentRow = {
          id: newId('agt', nowDate),
          account_id: ctx.accountId,
          name: input.name,
          status: 'active',
          metadata: JSON.stringify(input.metadata ?? {}),
          public_jwk: input.public_jwk ? JSON.stringify(input.public_jwk) : null,
          created_at: now,
          updated_at: now,
        }
        await repo.insertAgent(trx, row)
        const agent = toAgent(row)
        await recordEvent(trx, { accountId: ctx.accountId, type: 'agent.created', object: agent, requestId: ctx.requestId, createdAt: now })
        return agent
      })
    },

    async get(ctx: RequestContext, id: string): Promise<Agent> {
      const row = await repo.findAgent(db.kysely, ctx.accountId, id)
      if (!row) throw errors.resourceMissing('agent', id)
      return toAgent(row)
    },

    async list(ctx: RequestContext, input: ListAgentsInput) {
      const filter = { accountId: ctx.accountId, status: input.status }
      return listPage(input, {
        resource: 'agent',
        find: (id) => repo.findAgent(db.kysely, ctx.accountId, id),
        rows: (window) => repo.listAgents(db.kysely, filter, window),
        total: () => repo.countAgents(db.kysely, filter),
        map: toAgent,
      })
    },

    /**
     * Disables an agent for good: its keys stop authenticating (at once in this process, within the key
     * cache's second elsewhere), and it can be granted no new mandate or wish. Its mandates stay as they
     * are for the account to revoke; no key of the agent can pay with them any more.
     */
    async disable(ctx: RequestContext, id: string): Promise<Agent> {
      const now = toTimestamp(clock.now())
      const agent = await inTransaction(db, ctx, async (trx) => {
        const disabled = await repo.disable(trx, ctx.accountId, id, now)
        if (!disabled) {
          if (!(await repo.findAgent(trx, ctx.accountId, id))) throw errors.resourceMissing('agent', id)
          throw errors.invalidStateTransition('The agent is already disabled')
        }
        const result = toAgent(disabled)
        await recordEvent(trx, { accountId: ctx.accountId, type: 'agent.disabled', object: result, requestId: ctx.requestId, createdAt: now })
        return result
      })
      accounts.forgetCachedKeys()
      return agent
    },

    /** A new `ak_` key for an active agent of the account; the secret is in this answer only. */
    async createKey(ctx: RequestContext, id: string): Promise<CreatedKey> {
      return inTransaction(db, ctx, async (trx) => {
        const agent = await repo.findAgent(trx, ctx.accountId, id)
        if (!agent) throw errors.resourceMissing('agent', id)
        if (agent.status !== 'active') throw errors.invalidStateTransition('The agent is disabled; a disabled agent gets no keys')
        return accounts.createAgentKey(trx, ctx.accountId, id)
      })
    },

    /** For the CLI: a key for any account's active agent, by the agent's id. */
    async createKeyForAgent(agentId: string): Promise<CreatedKey> {
      const agent = await repo.findAgentById(db.kysely, agentId)
      if (!agent) throw errors.resourceMissing('agent', agentId)
      if (agent.status !== 'active') throw errors.invalidStateTransition('The agent is disabled; a disabled agent gets no keys')
      return accounts.createAgentKey(db.kysely, agent.account_id, agent.id)
    },
  }
}

export type AgentService = ReturnType<typeof createAgentService>
