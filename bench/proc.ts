/**
 * Load-independent figures from Linux's /proc: CPU time and peak RSS of a process tree (a server and
 * its node:cluster workers) and of any process by pid (PostgreSQL's backends). Other engineers' work
 * on the same cores moves req/s, not the CPU a request costs.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'

/** Clock ticks a second of /proc/<pid>/stat's utime and stime (100 on every Linux we run, but ask). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

function read(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch {
    // The process ended (or is not ours to read): it counts as nothing.
    return null
  }
}

/** `pid` and all its descendants that are alive, through /proc/<pid>/task/<tid>/children. */
export function processTree(pid: number): number[] {
  const found = [pid]
  for (let i = 0; i < found.length; i++) {
    const tasks = (() => {
      try {
        return fs.readdirSync(`/proc/${found[i]}/task`)
      } catch {
        return []
      }
    })()
    for (const tid of tasks) {
      for (const child of (read(`/proc/${found[i]}/task/${tid}/children`) ?? '').split(' ')) {
        if (child.trim()) found.push(Number(child))
      }
    }
  }
  return found
}

/** When the process started (field 22 of stat, ticks after boot): tells a pid from a later reuse of it. */
export function startedAt(pid: number): number | null {
  const stat = read(`/proc/${pid}/stat`)
  return stat ? Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]) : null
}

/** CPU seconds (user + system) the processes have used so far; ended ones count as 0. */
export function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0
  for (const pid of pids) {
    const stat = read(`/proc/${pid}/stat`)
    if (!stat) continue
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    ticks += Number(fields[11]) + Number(fields[12])
  }
  return ticks / TICKS_PER_SECOND
}

/** The sum of each process's peak resident set (VmHWM), in MB: each worker has its own heap. */
export function peakRssMb(pids: readonly number[]): number {
  let kb = 0
  for (const pid of pids) kb += Number(/VmHWM:\s+(\d+)/.exec(read(`/proc/${pid}/status`) ?? '')?.[1] ?? 0)
  return Math.round(kb / 1024)
}

/** What postgresPids needs of a PostgreSQL connection (a pg.Client). */
interface Queryable {
  query(text: string, values: unknown[]): Promise<{ rows: Array<{ pid: number }> }>
}

/**
 * PostgreSQL's processes that do a run's work: the backends of the connections named `applicationName`
 * (the harness puts it in the server's DATABASE_URL: `application_name`) and the background ones (WAL
 * writer, checkpointer, autovacuum), which are shared with anything else on that PostgreSQL. Empty when
 * PostgreSQL is not on this machine's /proc, where their CPU cannot be read.
 */
export async function postgresPids(client: Queryable, applicationName: string): Promise<number[]> {
  const { rows } = await client.query(
    `select pid from pg_stat_activity where application_name = $1 or backend_type <> 'client backend'`, [applicationName])
  const pids = rows.map((r) => r.pid)
  return cpuSeconds(pids) > 0 ? pids : []
}
