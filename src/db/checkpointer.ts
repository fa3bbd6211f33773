import type SQLite from 'better-sqlite3'

/**
 * WAL checkpoints for the embedded store: SQLite's own auto-checkpoint, a PASSIVE checkpoint run by the
 * COMMIT that takes the WAL past `AUTOCHECKPOINT_PAGES`, on the event loop. A worker thread used to run
 * them off the loop, but its isolate and second copy of better-sqlite3 held about 17 MB of RSS (issue 17:
 * peak RSS under 150 MB), while a checkpoint of this size stalls the loop for a few milliseconds, far
 * less than a group commit's own synchronous section. The reads of this process share a snapshot for a
 * turn at most, which the durable batch ends before each COMMIT (turn-snapshot.ts), so none is open when
 * the writer checkpoints: the checkpoint catches up, the next write restarts the WAL, and the WAL stays
 * bounded; journal_size_limit trims the file after a burst.
 */

/** SQLite's default: 4 MiB of WAL (4 KiB pages) between checkpoints. */
export const AUTOCHECKPOINT_PAGES = 1000
/** What a restarted WAL file is truncated to. */
const JOURNAL_SIZE_LIMIT = 16 * 1024 * 1024

/** Sets the writer's checkpoint policy (a connection setting: run once, on the writer). */
export function configureCheckpoints(connection: SQLite.Database): void {
  connection.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`)
  connection.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT}`)
}
