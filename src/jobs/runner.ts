import type { Logger } from 'pino'
import type { Database, Trx } from '../db/database.js'
import { type Clock, toTimestamp } from '../lib/clock.js'
import * as queue from '../modules/queue/repository.js'

export interface JobContext {
  id: string
  payload: Record<string, unknown>
  attempts: number
  /**
   * Runs the job's state change in a transaction that also removes the job (when `work` returns
   * undefined) or schedules its next step (when it returns a date): the two commit together.
   */
  commit(work: (trx: Trx) => Promise<Date | undefined>): Promise<Date | undefined>
}

/** Returns when to run the job again, or undefined when it is done. */
export type JobHandler = (job: JobContext) => Promise<Date | undefined>

export interface PeriodicTask {
  name: string
  everyMs: number
  run(): Promise<void>
}

export interface JobRunnerOptions {
  db: Database
  clock: Clock
  logger: Pick<Logger, 'warn' | 'error' | 'info'>
  handlers: Record<string, JobHandler>
  periodic?: PeriodicTask[]
  pollIntervalMs?: number
  batchSize?: number
  /** How long a claimed job stays this process's; past it another process may take it. */
  leaseMs?: number
  /** Keep the process alive while the runner runs (a worker has nothing else that does). */
  keepProcessAlive?: boolean
}

const MAX_BACKOFF_MS = 5 * 60_000
/** A database outage fails every pass; one warning a minute says so without flooding the log. */
const PASS_FAILURE_WARN_EVERY_MS = 60_000

/**
 * The background runner. Work lives in the jobs table, so it survives restarts; it is claimed with a
 * lease (FOR UPDATE SKIP LOCKED on PostgreSQL), so any number of processes share it and none does a
 * job twice while its lease holds.
 */
export function createJobRunner(options: JobRunnerOptions) {
  const { db, clock, logger, handlers, periodic = [] } = options
  const pollIntervalMs = options.pollIntervalMs ?? 250
  const batchSize = options.batchSize ?? 20
  const leaseMs = options.leaseMs ?? 30_000
  const lastRun = new Map<string, number>()
  let timer: NodeJS.Timeout | undefined
  let current: Promise<void> | undefined
  let stopping = false
  let lastPassWarning = 0

  async function finishOutsideTransaction(id: string, next: Date | undefined) {
    if (next) await queue.reschedule(db.kysely, id, toTimestamp(next), '')
    else await queue.complete(db.kysely, id)
  }

  async function runJob(job: queue.JobRow): Promise<void> {
    const handler = handlers[job.type]
    if (!handler) {
      logger.error({ job_id: job.id, job_type: job.type }, 'no handler for job type; it stays queued')
      await queue.reschedule(db.kysely, job.id, toTimestamp(new Date(clock.now().getTime() + MAX_BACKOFF_MS)), 'no handler')
      return
    }
    let committed = false
    const context: JobContext = {
      id: job.id,
      payload: JSON.parse(job.payload) as Record<string, unknown>,
      attempts: job.attempts,
      commit: (work) => db.kysely.transaction().execute(async (trx) => {
        const next = await work(trx)
        if (next) await queue.scheduleNextStep(trx, job.id, toTimestamp(next))
        else await queue.complete(trx, job.id)
        committed = true
        return next
      }),
    }
    try {
      const next = await handler(context)
      if (!committed) await finishOutsideTransaction(job.id, next)
    } catch (error) {
      const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(job.attempts, 20))
      logger.warn({ err: error, job_id: job.id, job_type: job.type, attempts: job.attempts }, 'job failed; retrying later')
      await queue.reschedule(db.kysely, job.id, toTimestamp(new Date(clock.now().getTime() + backoff)), String(error))
        .catch((e: unknown) => logger.error({ err: e, job_id: job.id }, 'could not reschedule job; its lease will expire'))
    }
  }

  async function runPeriodic(): Promise<void> {
    const nowMs = clock.now().getTime()
    for (const task of periodic) {
      if (stopping) return
      if (nowMs - (lastRun.get(task.name) ?? 0) < task.everyMs) continue
      lastRun.set(task.name, nowMs)
      try {
        await task.run()
      } catch (error) {
        logger.warn({ err: error, task: task.name }, 'periodic task failed; it runs again next period')
      }
    }
  }

  /** One pass: claim what is due and run it, then the periodic tasks. Returns whether the batch was full. */
  async function tick(): Promise<boolean> {
    const now = clock.now()
    const claimed = await queue.claimDue(db.kysely, toTimestamp(now), toTimestamp(new Date(now.getTime() + leaseMs)), batchSize)
    const pending = [...claimed]
    while (pending.length > 0 && !stopping) await runJob(pending.shift()!)
    // Stopping with claimed jobs not yet run: hand them back so another process need not wait for the lease.
    if (pending.length > 0) await queue.release(db.kysely, pending.map((j) => j.id))
    await runPeriodic()
    return claimed.length === batchSize
  }

  function schedule(delayMs: number) {
    if (stopping) return
    timer = setTimeout(() => {
      current = tick()
        .catch((error: unknown) => {
          const now = Date.now()
          if (now - lastPassWarning >= PASS_FAILURE_WARN_EVERY_MS) {
            lastPassWarning = now
            logger.warn({ err: error }, 'job runner pass failed; retrying every poll, next warning in a minute at the earliest')
          }
          return false
        })
        .then((full) => schedule(full ? 0 : pollIntervalMs))
    }, delayMs)
    if (!options.keepProcessAlive) timer.unref()
  }

  return {
    start(): void {
      stopping = false
      schedule(0)
    },
    /** Runs one pass now (tests). */
    runOnce: () => tick(),
    /** Stops claiming, lets the job in hand finish, and hands back the rest. */
    async stop(): Promise<void> {
      stopping = true
      if (timer) clearTimeout(timer)
      await current
    },
  }
}

export type JobRunner = ReturnType<typeof createJobRunner>
