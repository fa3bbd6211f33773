import type SQLite from 'better-sqlite3'

/**
 * One read transaction on the embedded store's reader connection for the reads of a turn of the event
 * loop, instead of one per read. A read outside a transaction takes and drops its WAL read lock with two
 * fcntl() calls; on a loaded server these system calls cost more than the lookup itself
 * (docs/performance.md, fifth pass).
 *
 * The snapshot never shows less than a read of its own would: every write of this process commits
 * through the durable batch (durable-batch.ts), which ends the snapshot before its COMMIT, so a read made
 * after a COMMIT (by the writer's caller, once answered, or by anyone else) sees it. Nothing holds a
 * snapshot when the writer checkpoints, as before. Another process writing the same file (a CLI command)
 * is seen from the next turn on, as if the read had started a moment earlier.
 */
export class TurnSnapshot {
  private readonly begin: SQLite.Statement
  private readonly commit: SQLite.Statement
  private endScheduled = false

  constructor(private readonly connection: SQLite.Database) {
    this.begin = connection.prepare('BEGIN')
    this.commit = connection.prepare('COMMIT')
  }

  /** Before a read on the connection: opens the snapshot unless one is open; it ends with the turn. */
  enter(): void {
    if (this.connection.inTransaction) return
    this.begin.run()
    if (!this.endScheduled) {
      this.endScheduled = true
      setImmediate(this.endOfTurn)
    }
  }

  /** Ends the snapshot, if one is open: the next read sees every COMMIT made so far. */
  end(): void {
    if (this.connection.inTransaction) this.commit.run()
  }

  private readonly endOfTurn = (): void => {
    this.endScheduled = false
    if (this.connection.open) this.end()
  }
}
