import type { Executor } from '../../db/database.js'
import { countRows, filteredList, type ListQuery, listRows } from '../../db/paging.js'
import type { AgentsTable, DatabaseSchema } from '../../db/schema.js'
import type { Window } from '../../lib/paging.js'
import type { AgentStatus } from './schemas.js'

export type AgentRow = AgentsTable

export async function insertAgent(db: Executor, row: AgentRow): Promise<void> {
  await db.insertInto('agents').values(row).execute()
}

export function findAgent(db: Executor, accountId: string, id: string): Promise<AgentRow | undefined> {
  return db.selectFrom('agents').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
}

/** Any account's agent, by id (the CLI, which acts for the operator). */
export function findAgentById(db: Executor, id: string): Promise<AgentRow | undefined> {
  return db.selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst()
}

/** Disables an active agent; undefined when it is not active (or not there). */
export function disable(trx: Executor, accountId: string, id: string, now: string): Promise<AgentRow | undefined> {
  return trx.updateTable('agents').set({ status: 'disabled', updated_at: now })
    .where('account_id', '=', accountId).where('id', '=', id).where('status', '=', 'active')
    .returningAll().executeTakeFirst()
}

export interface AgentListFilter {
  accountId: string
  status?: AgentStatus | undefined
}

function filtered(db: Executor, filter: AgentListFilter) {
  let query = db.selectFrom('agents').where('account_id', '=', filter.accountId)
  if (filter.status !== undefined) query = query.where('status', '=', filter.status)
  return query
}

export function listAgents(db: Executor, filter: AgentListFilter, window: Window) {
  return listRows(db, agentList(db, filter), window)
}

export function countAgents(db: Executor, filter: AgentListFilter): Promise<number> {
  return countRows(db, agentList(db, filter))
}

/** The list's query, compiled once per set of filters (db/paging.ts). */
function agentList(db: Executor, filter: AgentListFilter): ListQuery<DatabaseSchema, 'agents'> {
  return filteredList('agents', filter, (slotted) => filtered(db, slotted))
}
