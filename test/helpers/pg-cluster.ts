import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { freePort } from './receiver.js'

/**
 * A throw-away PostgreSQL cluster (initdb + pg_ctl) on a port of its own, for tests that stop and
 * start the database under a running Wishpay. When the tests run as root the binaries run as the
 * `postgres` user (initdb refuses root). Everything lives in one temporary directory, removed by
 * destroy().
 */
export interface PgCluster {
  port: number
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string
  dir: string
  /** pg_ctl start -w: resolves once the server accepts connections. */
  start(): Promise<void>
  /** pg_ctl stop -m fast: open connections are ended and the port closes. */
  stop(): Promise<void>
  /**
   * SIGSTOPs the postmaster and every backend: the port still accepts TCP connections but nothing
   * answers, as with a network partition or a hung host. thaw() undoes it; destroy() thaws first.
   */
  freeze(): void
  thaw(): void
  /** Stops the server if it runs and removes the directory. Never throws. */
  destroy(): Promise<void>
}

const PG_ROOT = '/usr/lib/postgresql'

/** The bin directory of the newest PostgreSQL installed under /usr/lib/postgresql that has initdb and pg_ctl. */
export function findPostgresBin(): string | undefined {
  let versions: string[]
  try {
    versions = fs.readdirSync(PG_ROOT)
  } catch {
    return undefined
  }
  const candidates = versions
    .filter((v) => /^\d+(\.\d+)?$/.test(v))
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => path.join(PG_ROOT, v, 'bin'))
    .filter((bin) => fs.existsSync(path.join(bin, 'initdb')) && fs.existsSync(path.join(bin, 'pg_ctl')))
  return candidates[0]
}


function run(file: string, args: string[], timeoutMs: number): Promise<{ stdout: string, stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${[file, ...args].join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`))
      else resolve({ stdout, stderr })
    })
  })
}

/** The postmaster's pid (from postmaster.pid) and every process it started, from /proc. */
function clusterPids(data: string): number[] {
  let main: number
  try {
    main = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
  } catch {
    return []
  }
  if (!Number.isInteger(main) || main <= 0) return []
  const children: number[] = []
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === main) children.push(Number(entry))
    } catch {
      // The process ended meanwhile.
    }
  }
  return [main, ...children]
}

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal)
    } catch {
      // Gone already.
    }
  }
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0

/** Runs a PostgreSQL binary, as the postgres user when we are root. */
function pgRun(bin: string, tool: string, args: string[], timeoutMs = 60_000) {
  const file = path.join(bin, tool)
  return isRoot() ? run('runuser', ['-u', 'postgres', '--', file, ...args], timeoutMs) : run(file, args, timeoutMs)
}

function postgresIds(): { uid: number, gid: number } {
  const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('postgres:'))
  if (!line) throw new Error('running as root, but there is no postgres user to run initdb/pg_ctl as')
  const [, , uid, gid] = line.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}

/**
 * initdb a new cluster in a temporary directory and start it on a free port (trust authentication,
 * 127.0.0.1 only, its socket in its own directory). Throws a clear error when PostgreSQL's server
 * binaries are not installed.
 */
export async function startPgCluster(): Promise<PgCluster> {
  const bin = findPostgresBin()
  if (!bin) {
    throw new Error(`PostgreSQL server binaries (initdb, pg_ctl) were not found under ${PG_ROOT}/*/bin: install the postgresql package to run this test`)
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-pg-'))
  const data = path.join(dir, 'data')
  const log = path.join(dir, 'postgres.log')
  let running = false

  const destroy = async () => {
    if (running || fs.existsSync(path.join(data, 'postmaster.pid'))) {
      const pids = clusterPids(data)
      signalAll(pids, 'SIGCONT')
      try {
        await pgRun(bin, 'pg_ctl', ['-D', data, 'stop', '-m', 'immediate', '-w', '-t', '20'])
      } catch {
        // Already stopped, never started, or stuck: whatever is left is killed below.
      }
      signalAll(pids.filter((pid) => fs.existsSync(`/proc/${pid}`)), 'SIGKILL')
      running = false
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }

  try {
    if (isRoot()) {
      const { uid, gid } = postgresIds()
      fs.chownSync(dir, uid, gid)
    }
    await pgRun(bin, 'initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'])
    const port = await freePort()
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`
    const cluster: PgCluster = {
      port,
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      dir,
      async start() {
        await pgRun(bin, 'pg_ctl', ['-D', data, '-l', log, '-o', options, '-w', '-t', '30', 'start'])
        running = true
      },
      async stop() {
        await pgRun(bin, 'pg_ctl', ['-D', data, 'stop', '-m', 'fast', '-w', '-t', '30'])
        running = false
      },
      freeze: () => signalAll(clusterPids(data), 'SIGSTOP'),
      thaw: () => signalAll(clusterPids(data), 'SIGCONT'),
      destroy,
    }
    await cluster.start()
    return cluster
  } catch (error) {
    const logText = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').slice(-2000) : ''
    await destroy()
    throw new Error(`${(error as Error).message}${logText ? `\npostgres.log:\n${logText}` : ''}`, { cause: error })
  }
}
