/**
 * The server's shared commits over a run, from its own /metrics (`wishpay_db_commit_writes`,
 * `wishpay_db_commit_seconds`): how many writes each commit carried and how long the commits took. A
 * write's latency is mostly the commit it waits for and its own (docs/performance.md, eighteenth pass),
 * so this says from the server's side what the load generator's p99 is made of.
 */

export interface CommitTotals {
  writes: number
  commits: number
  seconds: number
  /** Cumulative commits by `le` bound of wishpay_db_commit_seconds, in seconds (+Inf as Infinity). */
  secondsBuckets: Map<number, number>
}

/** Reads the totals so far; null when the server's /metrics has none (an older build, a token). */
export async function scrapeCommits(serverUrl: string): Promise<CommitTotals | null> {
  const res = await fetch(new URL('/metrics', serverUrl))
  if (!res.ok) return null
  const text = await res.text()
  const value = (name: string) => {
    const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)
    return match ? Number(match[1]) : null
  }
  const writes = value('wishpay_db_commit_writes_sum')
  const commits = value('wishpay_db_commit_writes_count')
  const seconds = value('wishpay_db_commit_seconds_sum')
  if (writes === null || commits === null || seconds === null) return null
  const secondsBuckets = new Map<number, number>()
  for (const match of text.matchAll(/^wishpay_db_commit_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)) {
    secondsBuckets.set(match[1] === '+Inf' ? Infinity : Number(match[1]), Number(match[2]))
  }
  return { writes, commits, seconds, secondsBuckets }
}

/** One line on the commits between two scrapes, or null when there was none to compare. */
export function describeCommits(label: string, before: CommitTotals | null, after: CommitTotals | null): string | null {
  if (before === null || after === null) return null
  const commits = after.commits - before.commits
  if (commits <= 0) return null
  const writes = after.writes - before.writes
  const meanMs = ((after.seconds - before.seconds) / commits) * 1000
  // The smallest bucket bound within which 99 % of this run's commits fell.
  let p99Bound = Infinity
  for (const [le, cumulative] of [...after.secondsBuckets].sort((a, b) => a[0] - b[0])) {
    if (cumulative - (before.secondsBuckets.get(le) ?? 0) >= commits * 0.99) {
      p99Bound = le
      break
    }
  }
  const p99 = Number.isFinite(p99Bound) ? `${p99Bound * 1000} ms` : 'over 1 s'
  return `${label}: the server's shared commits over the scenario's runs, warm-ups included (its /metrics): ${writes.toLocaleString('en-US')} writes in ${commits.toLocaleString('en-US')} commits, ${(writes / commits).toFixed(1)} a commit; a commit took ${meanMs.toFixed(1)} ms on average, 99 % within ${p99}`
}
