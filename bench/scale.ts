/**
 * The scale-out figure (issue 17, item 5; docs/scaling.md): `wishpay serve` with WORKERS=1, 2, 4
 * (node:cluster workers on one port, PostgreSQL only) under POST /payments at 64 connections, in two
 * shapes: every payment against one mandate (serialised by its row lock from the hold to the commit:
 * expected flat), and payments spread over 64 mandates of one account (should grow until PostgreSQL or
 * the two cores are the limit). Beside req/s and p99, the CPU each request costs the server processes,
 * PostgreSQL's processes and the load generator, read from /proc, which the machine's other load moves
 * less than it moves req/s.
 */
import os from 'node:os'
import pg from 'pg'
import { cpuSeconds, postgresPids } from './proc.js'
import { startWishpay } from './processes.js'
import { load, PAYMENT_BODY } from './scenarios.js'
import type { Seed } from './seed.js'
import { wrk, type WrkResult } from './wrk.js'
import type { PostgresTestStore } from '../test/helpers/stores.js'

export interface ScaleRow {
  shape: string
  workers: number
  /** Server processes seen: the primary and its workers (1 when WORKERS is not honoured or is 1). */
  processes: number
  requestsPerSecond: number
  p50: number
  p99: number
  errors: number
  wrk: WrkResult | null
  /** Payments the database committed during autocannon's measured seconds (the CPU figures' divisor). */
  paymentsCommitted: number
  /**
   * CPU milliseconds a payment committed during autocannon's measured seconds; null without any, and for
   * PostgreSQL where /proc does not show its processes (another host or container).
   */
  serverCpuMs: number | null
  postgresCpuMs: number | null
  generatorCpuMs: number | null
  /** CPU seconds of all three a second of the run: 2 is both cores of this machine. */
  coresBusy: number
  peakRssMb: number
  load1: number
}

export interface ScaleOptions {
  workerCounts: number[]
  connections: number
  durationSeconds: number
  warmupSeconds: number
  withWrk: boolean
}

/**
 * The account's payments so far. The CPU of a window is divided by the payments committed in it, not by
 * the answers autocannon counted: the requests the warm-up left in flight finish inside the window, and
 * those in flight at its end are cut off; the database counts what the CPU was spent on.
 */
async function paymentCount(client: pg.Client, accountId: string): Promise<number> {
  const { rows } = await client.query<{ n: string }>('select count(*) as n from payments where account_id = $1', [accountId])
  return Number(rows[0]!.n)
}

export async function scale(store: PostgresTestStore, seed: Seed, mandates: string[], options: ScaleOptions): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = []
  const client = new pg.Client({ connectionString: store.postgres.url, options: `-c search_path=${store.postgres.schema}` })
  await client.connect()
  const applicationName = `wishpay-bench-${store.postgres.schema}`
  const url = new URL(store.env.DATABASE_URL!)
  url.searchParams.set('application_name', applicationName)
  const shapes = [
    { shape: 'one mandate', mandates: [seed.mandateId] },
    { shape: `${mandates.length} mandates, one account`, mandates },
  ]
  try {
    for (const workers of options.workerCounts) {
      process.stderr.write(`[postgres] scale: WORKERS=${workers}…\n`)
      const server = await startWishpay({ ...store.env, DATABASE_URL: url.toString(), WORKERS: String(workers) })
      try {
        for (const { shape, mandates: targets } of shapes) {
          const target = {
            url: server.url, key: seed.key, path: '/payments', method: 'POST' as const, body: PAYMENT_BODY, mandates: targets,
            connections: options.connections, durationSeconds: options.durationSeconds,
          }
          // Warm-up apart, so that the CPU counted below is the measured seconds' only.
          if (options.warmupSeconds) await load({ ...target, durationSeconds: options.warmupSeconds })
          const serverPids = server.pids()
          const pgPids = await postgresPids(client, applicationName)
          const paymentsBefore = await paymentCount(client, seed.accountId)
          const before = { server: cpuSeconds(serverPids), postgres: cpuSeconds(pgPids), generator: process.cpuUsage(), at: performance.now() }
          const measured = await load(target)
          const seconds = (performance.now() - before.at) / 1000
          const generatorUsage = process.cpuUsage(before.generator)
          const used = {
            server: cpuSeconds(serverPids) - before.server,
            postgres: cpuSeconds(pgPids) - before.postgres,
            generator: (generatorUsage.user + generatorUsage.system) / 1e6,
          }
          const committed = (await paymentCount(client, seed.accountId)) - paymentsBefore
          const perRequest = (cpu: number) => (committed > 0 ? Math.round((cpu / committed) * 1000 * 100) / 100 : null)
          // wrk right after: the same load has just warmed the server.
          const wrkResult = options.withWrk ? await wrk(target) : null
          rows.push({
            shape, workers, processes: serverPids.length,
            requestsPerSecond: Math.round(measured.requestsPerSecond), p50: measured.p50, p99: measured.p99, errors: measured.errors,
            wrk: wrkResult,
            paymentsCommitted: committed,
            serverCpuMs: perRequest(used.server),
            postgresCpuMs: pgPids.length > 0 ? perRequest(used.postgres) : null,
            generatorCpuMs: perRequest(used.generator),
            coresBusy: Math.round(((used.server + used.postgres + used.generator) / seconds) * 100) / 100,
            peakRssMb: server.peakRssMb(),
            load1: os.loadavg()[0]!,
          })
        }
      } finally {
        await server.stop()
      }
    }
  } finally {
    await client.end()
  }
  return rows
}
