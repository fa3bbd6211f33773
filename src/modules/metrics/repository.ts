import type { Executor } from '../../db/database.js'

/** The SQL behind the gauges of /metrics (src/http/metrics.ts) that are read at scrape time. */

/** How many payments there are in each status (statuses with none are absent). */
export async function countPaymentsByStatus(db: Executor): Promise<Array<{ status: string, n: number }>> {
  const rows = await db.selectFrom('payments').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status').execute()
  return rows.map((row) => ({ status: row.status, n: Number(row.n) }))
}
