import type { Executor } from '../../db/database.js'
import { forUpdateSkipLocked } from '../../db/dialect.js'
import type { JobsTable } from '../../db/schema.js'
import { toTimestamp } from '../../lib/clock.js'
import { newId } from '../../lib/ids.js'

/**
 * The job queue's SQL: the jobs table that background work is claimed from (src/jobs/runner.ts) and
 * that modules add jobs to in the transaction that makes them necessary.
 */

export type JobRow = JobsTable

export interface NewJob {
  type: string
  payload: Record<string, unknown>
  runAt: Date
}

/** The row of a new job. */
export function jobRow(job: NewJob, now: Date): JobRow {
  return {
    id: newId('job', now),
    type: job.type,
    payload: JSON.stringify(job.payload),
    run_at: toTimestamp(job.runAt),
    attempts: 0,
    locked_until: null,
    last_error: null,
    created_at: toTimestamp(now),
  }
}

/** Rows per INSERT, so that any number of jobs stays far below SQLite's 32,766 bound parameters. */
const JOBS_PER_INSERT = 500

/** Jobs in groups of at most JOBS_PER_INSERT, one INSERT each. */
export function inBatches(jobs: JobRow[]): JobRow[][] {
  const batches: JobRow[][] = []
  for (let i = 0; i < jobs.length; i += JOBS_PER_INSERT) batches.push(jobs.slice(i, i + JOBS_PER_INSERT))
  return batches
}

/** Adds several jobs in the caller's transaction. */
export async function insertJobs(trx: Executor, jobs: JobRow[]): Promise<void> {
  for (const batch of inBatches(jobs)) await trx.insertInto('jobs').values(batch).execute()
}

/** Adds a job; called inside the transaction that makes it necessary, so the two commit together. */
export async function enqueue(trx: Executor, job: NewJob, now: Date): Promise<string> {
  const row = jobRow(job, now)
  await trx.insertInto('jobs').values(row).execute()
  return row.id
}

/**
 * Leases up to `limit` due jobs to this process until `leaseUntil`. On PostgreSQL the candidates are
 * picked FOR UPDATE SKIP LOCKED, so processes claiming at once never take the same job; a job whose
 * process died is claimable again once its lease has run out.
 */
export function claimDue(db: Executor, now: string, leaseUntil: string, limit: number): Promise<JobRow[]> {
  return db.updateTable('jobs')
    .set((eb) => ({ locked_until: leaseUntil, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', (eb) => {
      const due = eb.selectFrom('jobs').select('id')
        .where('run_at', '<=', now)
        .where((w) => w.or([w('locked_until', 'is', null), w('locked_until', '<', now)]))
        .orderBy('run_at').limit(limit)
      return forUpdateSkipLocked(db, due)
    })
    .returningAll()
    .execute()
}

/** Done: the job goes, in the transaction of the work it did. */
export async function complete(trx: Executor, id: string): Promise<void> {
  await trx.deleteFrom('jobs').where('id', '=', id).execute()
}

/** The job's next step is due at `runAt`: a new lease, with its attempts counted afresh. */
export async function scheduleNextStep(trx: Executor, id: string, runAt: string): Promise<void> {
  await trx.updateTable('jobs').set({ run_at: runAt, locked_until: null, attempts: 0 }).where('id', '=', id).execute()
}

/** Failed this time: try again at `retryAt`. */
export async function reschedule(db: Executor, id: string, retryAt: string, error: string): Promise<void> {
  await db.updateTable('jobs').set({ run_at: retryAt, locked_until: null, last_error: error.slice(0, 1000) }).where('id', '=', id).execute()
}

/** Hands leased jobs back (graceful shutdown) so another process can take them at once. */
export async function release(db: Executor, ids: string[]): Promise<void> {
  if (ids.length === 0) return
  await db.updateTable('jobs').set({ locked_until: null }).where('id', 'in', ids).execute()
}

/**
 * Frees every lease. Only for the embedded SQLite store at start-up: one process at a time serves it,
 * so any lease left is from a process that died, and its jobs need not wait for the lease to run out.
 */
export async function releaseAll(db: Executor): Promise<void> {
  await db.updateTable('jobs').set({ locked_until: null }).where('locked_until', 'is not', null).execute()
}

export interface QueueStats {
  depth: number
  /** Seconds the oldest due job has waited past its run_at. */
  lagSeconds: number
}

export async function stats(db: Executor, now: string): Promise<QueueStats> {
  const row = await db.selectFrom('jobs')
    .select((eb) => [eb.fn.countAll<number>().as('depth'), eb.fn.min('run_at').as('oldest')])
    .where('run_at', '<=', now)
    .executeTakeFirstOrThrow()
  const oldest = row.oldest as string | null
  return { depth: Number(row.depth), lagSeconds: oldest ? Math.max(0, (Date.parse(now) - Date.parse(oldest)) / 1000) : 0 }
}
