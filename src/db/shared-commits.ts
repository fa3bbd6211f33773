/** Hears of each commit that writes shared: how many writes it made durable, and how long it took. */
export type SharedCommitListener = (writes: number, seconds: number) => void

/**
 * A store's group commits as they happen, for whoever listens (http/metrics.ts). The store reports each
 * commit once, after it succeeded: on SQLite every COMMIT of a durable batch (db/durable-batch.ts), whose
 * time runs from its BEGIN IMMEDIATE, so it is how long its first write waited to be durable; on
 * PostgreSQL every transaction of a statement batch (db/statement-batch.ts: payments and wishes), from
 * when it was sent to its answer. A report costs a call per listener per commit, none per request.
 */
export class SharedCommits {
  private listeners: SharedCommitListener[] = []

  /** Calls `listener` for each commit from now on; the returned function stops it. */
  listen(listener: SharedCommitListener): () => void {
    this.listeners = [...this.listeners, listener]
    return () => { this.listeners = this.listeners.filter((l) => l !== listener) }
  }

  /** Never throws: a commit is made and its writers are answered whatever a listener does. */
  report(writes: number, seconds: number): void {
    for (const listener of this.listeners) {
      try {
        listener(writes, seconds)
      } catch {
        // Observing is not worth a write: a failing listener loses this one observation.
      }
    }
  }
}

/** Seconds since `startedAt` (a performance.now() reading). */
export function secondsSince(startedAt: number): number {
  return (performance.now() - startedAt) / 1000
}
