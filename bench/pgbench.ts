/**
 * The strongest floor for POST /payments on PostgreSQL (issue 17): pgbench running the four statements
 * of the node-pg floor (bench/payment.pgbench) against the bench's own schema, mandate and account, with
 * the load's client count, `-j 2 -n`, the scenario's duration and `-M prepared`. Stronger than the node-pg
 * floor: C clients, one connection each (no pool of 10 to queue on), statements parsed and planned once
 * per connection, no JavaScript between the round trips.
 */
import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { ROOT } from './processes.js'
import type { Seed } from './seed.js'
import type { PostgresTestStore } from '../test/helpers/stores.js'

const run = promisify(execFile)

export type PgbenchResult =
  | { ok: true, requestsPerSecond: number, latencyMs: number, transactions: number, budgetLeft: number }
  /** pgbench missing, or it failed (aborted clients, too many connections): the row says why. */
  | { ok: false, reason: string }

/** The service's timestamps (toISOString()); a -D variable, as pgbench reads `:MI` in a literal as one. */
const ISO_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'

export async function pgbenchFloor(store: PostgresTestStore, seed: Seed, durationSeconds: number, clients: number): Promise<PgbenchResult> {
  const args = [
    '-n', '-M', 'prepared', '-c', String(clients), '-j', '2', '-T', String(durationSeconds),
    '-f', path.join(ROOT, 'bench/payment.pgbench'),
    '-D', `account=${seed.accountId}`, '-D', `mandate=${seed.mandateId}`, '-D', `iso=${ISO_FORMAT}`,
    store.postgres.url,
  ]
  let output: { stdout: string, stderr: string }
  try {
    output = await run('pgbench', args, { env: { ...process.env, PGOPTIONS: `-c search_path=${store.postgres.schema}` }, maxBuffer: 1 << 22 })
  } catch (error) {
    const failed = error as { code?: unknown, stderr?: string }
    if (failed.code === 'ENOENT') return { ok: false, reason: 'pgbench not found' }
    const first = failed.stderr?.split('\n').find((line) => line.includes('error')) ?? String(error)
    return { ok: false, reason: `pgbench failed: ${first.slice(0, 160)}` }
  }
  // "tps = 812.34 (without initial connection time)", "latency average = 78.1 ms",
  // "number of transactions actually processed: 8123"
  const transactions = /^number of transactions actually processed: (\d+)/m.exec(output.stdout)?.[1]
  // With none, pgbench prints neither tps nor latency.
  if (transactions === '0') return { ok: false, reason: `pgbench: no payment in ${durationSeconds} s` }
  const tps = /^tps = ([\d.]+) \(without initial connection time\)/m.exec(output.stdout)?.[1]
  const latency = /^latency average = ([\d.]+) ms/m.exec(output.stdout)?.[1]
  if (!tps || !latency || !transactions) return { ok: false, reason: `unreadable pgbench output (${output.stdout.length} characters)` }
  return { ok: true, requestsPerSecond: Number(tps), latencyMs: Number(latency), transactions: Number(transactions), budgetLeft: await budgetLeft(store, seed.mandateId) }
}

/**
 * The mandate's budget left after the run. A refused hold aborts a pgbench client (its \gset gets no
 * row), so a run that reaches the end held every payment; this shows how far the budget is from that.
 */
async function budgetLeft(store: PostgresTestStore, mandateId: string): Promise<number> {
  const client = new pg.Client({ connectionString: store.postgres.url, options: `-c search_path=${store.postgres.schema}` })
  await client.connect()
  try {
    const { rows } = await client.query<{ left: string }>('select budget_amount - amount_used as left from mandates where id = $1', [mandateId])
    return Number(rows[0]?.left)
  } finally {
    await client.end()
  }
}

/** `pgbench (PostgreSQL) 15.20 …`, or null when it is not installed. */
export async function pgbenchVersion(): Promise<string | null> {
  try {
    return (await run('pgbench', ['--version'])).stdout.trim()
  } catch {
    return null
  }
}
