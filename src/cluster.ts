import cluster, { type Worker } from 'node:cluster'
import { fileURLToPath } from 'node:url'
import type { Logger } from 'pino'

/**
 * The primary of `wishpay serve` with WORKERS > 1: it forks the workers, which share one port through
 * node:cluster (the primary accepts and hands connections round robin, Node's default on Linux), replaces
 * one that dies, and on SIGTERM/SIGINT lets every worker drain as a single server does (src/server.ts),
 * exiting once all are gone. It holds no database and loads none of the application.
 */

/** What a worker tells the primary once it listens (src/server.ts). */
export interface WorkerListening {
  wishpay: 'listening'
  /** The address it listens on: the shared one, the same in every worker (PORT=0 included). */
  address: string
  store: string
}

export interface SuperviseOptions {
  count: number
  logger: Logger
  /** Called once, when every worker of the first start listens, with the first one's report and all pids. */
  onListening(report: WorkerListening, pids: number[]): void
}

/**
 * A slot whose worker keeps dying is refilled after 0 s, then 1 s, 2 s, 4 s … at most 30 s, so a crash
 * loop (a database that refuses connections, a bad deploy) does not spin. A worker that lived a minute
 * resets its slot's count.
 */
const RESTART_FIRST_DELAY_MS = 1000
const RESTART_MAX_DELAY_MS = 30_000
const STABLE_AFTER_MS = 60_000

function isListeningReport(message: unknown): message is WorkerListening {
  return typeof message === 'object' && message !== null && (message as { wishpay?: unknown }).wishpay === 'listening'
}

/**
 * Workers run the code the primary runs. From the build, the compiled cli.js beside this file (also when
 * bin/wishpay.js chose the build: a build going stale meanwhile must not split the processes). From the
 * sources, the way the primary was started (cluster's defaults: process.argv[1] with process.execArgv,
 * which carry tsx's loader when it was given as a flag), with WISHPAY_RUN_SOURCES=1 so that
 * bin/wishpay.js does not switch to a build made meanwhile.
 */
function workerEnvironment(): Record<string, string> {
  if (fileURLToPath(import.meta.url).endsWith('.ts')) return { WISHPAY_RUN_SOURCES: '1' }
  cluster.setupPrimary({ exec: fileURLToPath(new URL('./cli.js', import.meta.url)) })
  return {}
}

interface Slot {
  index: number
  startedAt: number
  listening: boolean
}

export function superviseWorkers(options: SuperviseOptions): void {
  const { count, logger } = options
  const env = workerEnvironment()
  const slots = new Map<Worker, Slot>()
  const failures = new Array<number>(count).fill(0)
  const restarts = new Set<NodeJS.Timeout>()
  let announced = false
  let firstReport: WorkerListening | undefined
  let stopping = false
  let exitCode = 0

  function fork(index: number): void {
    const worker = cluster.fork(env)
    const slot: Slot = { index, startedAt: Date.now(), listening: false }
    slots.set(worker, slot)
    worker.on('message', (message: unknown) => {
      if (!isListeningReport(message)) return
      slot.listening = true
      firstReport ??= message
      const listening = [...slots.entries()].filter(([, s]) => s.listening)
      if (!announced && listening.length === count) {
        announced = true
        options.onListening(firstReport, listening.map(([w]) => w.process.pid!))
      }
    })
    // A worker process that cannot be spawned or signalled: its exit (if any) is handled below.
    worker.on('error', (error: Error) => logger.error({ err: error, worker_pid: worker.process.pid }, 'worker error'))
    worker.on('exit', (code: number | null, signal: string | null) => onExit(worker, slot, code, signal))
  }

  function onExit(worker: Worker, slot: Slot, code: number | null, signal: string | null): void {
    slots.delete(worker)
    const pid = worker.process.pid
    if (stopping) {
      // A worker stopped before it listened had nothing in flight; one that listened must drain cleanly.
      if (slot.listening && code !== 0) {
        exitCode = 1
        logger.error({ worker_pid: pid, code, signal }, 'worker did not stop cleanly')
      }
      if (slots.size === 0) process.exit(exitCode)
      return
    }
    if (!announced) {
      // A start that cannot bring its workers up fails, as a single process does, for the supervisor to see.
      logger.error({ worker_pid: pid, code, signal }, 'a worker failed to start; stopping the others')
      exitCode = 1
      stop()
      return
    }
    const lived = Date.now() - slot.startedAt
    if (lived >= STABLE_AFTER_MS) failures[slot.index] = 0
    const n = failures[slot.index]!
    const delay = n === 0 ? 0 : Math.min(RESTART_MAX_DELAY_MS, RESTART_FIRST_DELAY_MS * 2 ** (n - 1))
    failures[slot.index] = n + 1
    const level = code === 0 ? 'warn' : 'error'
    logger[level]({ worker_pid: pid, code, signal, lived_ms: lived, restart_in_ms: delay }, 'worker exited; starting a replacement')
    const timer = setTimeout(() => {
      restarts.delete(timer)
      fork(slot.index)
    }, delay)
    restarts.add(timer)
  }

  /** Every worker drains on its own SIGTERM handler; the primary only waits for them (onExit). */
  function stop(): void {
    stopping = true
    for (const timer of restarts) clearTimeout(timer)
    restarts.clear()
    if (slots.size === 0) process.exit(exitCode)
    // process.kill, not worker.kill: that one disconnects the IPC channel first, and a worker whose channel
    // closes exits at once, without draining.
    for (const worker of slots.keys()) worker.process.kill('SIGTERM')
  }

  const onSignal = (signal: NodeJS.Signals) => {
    if (!stopping) {
      logger.info({ signal, worker_pids: [...slots.keys()].map((w) => w.process.pid) }, 'shutting down')
      stop()
      return
    }
    // A second signal: whoever sent it will not wait for the drain.
    logger.warn({ signal }, 'second signal: killing the workers')
    exitCode = 1
    for (const worker of slots.keys()) worker.process.kill('SIGKILL')
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)

  for (let i = 0; i < count; i++) fork(i)
}
