import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type SQLite from 'better-sqlite3'

/**
 * WAL checkpoints for the embedded store, off the event loop. SQLite's auto-checkpoint (every 1000 WAL
 * pages) runs inside whichever COMMIT crosses the line and, under synchronous=FULL, fsyncs the database
 * file there: better-sqlite3 is synchronous, so every request in flight waited for it (a tail-latency
 * source of issue 17). Here the writer's auto-checkpoint is off; a worker thread with its own connection
 * runs PASSIVE checkpoints (they wait for no reader or writer) a little after commits, and tells how
 * long the WAL is. A PASSIVE checkpoint that runs while the writer appends never catches up with it, and
 * SQLite restarts the WAL only once a checkpoint has caught up, so past `hardLimitPages` the writer
 * checkpoints itself after a COMMIT, holding the connection (nothing appends meanwhile): the WAL stays
 * bounded whatever the load, and journal_size_limit trims the file when it restarts.
 */

/** Pages the WAL may reach before the writer checkpoints on the event loop (4 KiB pages: 32 MiB). */
const HARD_LIMIT_PAGES = 8192
/** What a restarted WAL file is truncated to. */
const JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
/** Background checkpoints run at most this often while commits come in. */
const INTERVAL_MS = 200
/** Commits before the worker is started: a database that is barely written never pays for one. */
const START_AFTER_COMMITS = 200

// Plain CommonJS so that it runs the same under tsx and from dist/.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const SQLite = require(workerData.driver)
const db = new SQLite(workerData.file, { fileMustExist: true })
db.pragma('busy_timeout = 0')
parentPort.on('message', (message) => {
  if (message === 'close') { db.close(); parentPort.close(); return }
  let pages = -1
  try { pages = db.pragma('wal_checkpoint(PASSIVE)')[0].log } catch {}
  parentPort.postMessage(pages)
})
`

export interface Checkpointer {
  /** Called after each COMMIT, with the connection held. */
  afterCommit(): void
  close(): Promise<void>
}

export function createCheckpointer(connection: SQLite.Database, file: string): Checkpointer {
  connection.pragma('wal_autocheckpoint = 0')
  connection.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT}`)
  let worker: Worker | undefined
  let commits = 0
  let busy = false
  /** Commits since the last checkpoint was asked for. */
  let dirty = false
  let timer: NodeJS.Timeout | undefined
  /** The WAL's length in pages, as the worker last saw it. */
  let walPages = 0
  let closed = false

  function start(): Worker {
    const started = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file, driver: createRequire(import.meta.url).resolve('better-sqlite3') },
    })
    started.unref()
    started.on('message', (pages: number) => {
      busy = false
      if (pages >= 0) walPages = pages
      // Commits that came in while it ran are checkpointed next.
      if (dirty) kick()
    })
    // A checkpoint that cannot run is no loss: the writer's own fallback below still bounds the WAL.
    started.on('error', () => { worker = undefined; busy = false })
    return started
  }

  function request(): void {
    timer = undefined
    if (closed || busy) return
    worker ??= start()
    busy = true
    dirty = false
    worker.postMessage('checkpoint')
  }

  function kick(): void {
    if (timer !== undefined || busy || closed || commits < START_AFTER_COMMITS) return
    timer = setTimeout(request, INTERVAL_MS)
    timer.unref()
  }

  return {
    afterCommit() {
      commits++
      dirty = true
      if (walPages >= HARD_LIMIT_PAGES) {
        const [result] = connection.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number, log: number, checkpointed: number }>
        if (result && result.busy === 0) walPages = result.log - result.checkpointed
      }
      kick()
    },
    async close() {
      closed = true
      if (timer) clearTimeout(timer)
      const running = worker
      worker = undefined
      if (!running) return
      const exited = new Promise((resolve) => running.once('exit', resolve))
      // Unreferenced, the worker would not keep the process up while the caller waits for it to exit.
      running.ref()
      running.postMessage('close')
      await exited
    },
  }
}
