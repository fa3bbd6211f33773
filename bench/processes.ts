import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { peakRssMb, processTree, startedAt } from './proc.js'
import { SERVER_NODE_FLAGS } from '../bin/node-flags.js'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export interface RunningProcess {
  url: string
  pid: number
  /** The process and its children alive now (node:cluster workers): each has its own heap and CPU. */
  pids(): number[]
  /** Peak resident set size so far, in MB (VmHWM), summed over pids(). */
  peakRssMb(): number
  stop(): Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Starts a node process whose stdout goes to a file (the kernel writes it, the harness does not read
 * it), and resolves once a JSON line with `msg` and an `address` appears there (with WORKERS, the
 * primary logs `wishpay listening` once every worker listens; its workers share its stdout).
 */
export async function startProcess(args: string[], env: Record<string, string>, readyMsg: string): Promise<RunningProcess> {
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-bench-')), 'stdout.log')
  const out = fs.openSync(logFile, 'w')
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', out, 'inherit'] })
  fs.closeSync(out)
  let exited = false
  child.on('exit', () => { exited = true })
  const pid = child.pid!
  for (let waited = 0; waited < 60_000; waited += 50) {
    if (exited) throw new Error(`${args.join(' ')} exited early; see ${logFile}`)
    const ready = fs.readFileSync(logFile, 'utf8').split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg?: string, address?: string })
      .find((line) => line.msg === readyMsg && line.address)
    if (ready) {
      return {
        url: ready.address!,
        pid,
        pids: () => processTree(pid),
        peakRssMb: () => peakRssMb(processTree(pid)),
        stop: async () => {
          const workers = processTree(pid).slice(1).map((worker) => ({ worker, started: startedAt(worker) }))
          if (!exited) {
            const gone = new Promise((resolve) => child.once('exit', resolve))
            child.kill('SIGTERM')
            await gone
          }
          // A worker its primary left behind would hold the port and the database's connections.
          for (const { worker, started } of workers) {
            // Only the same process: once its primary is gone, its pid may belong to someone else.
            if (startedAt(worker) !== started) continue
            try {
              process.kill(worker, 'SIGKILL')
            } catch {
              // It ended between the check and the signal.
            }
          }
          fs.rmSync(path.dirname(logFile), { recursive: true, force: true })
        },
      }
    }
    await sleep(50)
  }
  // Workers first: they are the primary's children only while it lives.
  for (const worker of processTree(pid).slice(1)) {
    try {
      process.kill(worker, 'SIGKILL')
    } catch {
      // It ended meanwhile.
    }
  }
  child.kill('SIGKILL')
  throw new Error(`${args.join(' ')} did not start; see ${logFile}`)
}

/**
 * Wishpay as deployed: the compiled dist/ (`npm run bench` builds it first), production mode, info logs
 * (one line per request), a limit no run reaches. `cpuProfileDir`: V8's CPU profile of the server,
 * written there when it exits. `build`: another build's output directory instead of dist/, and
 * `nodeFlags`: node's flags after the server's own (bench/compare-builds.ts).
 */
export function startWishpay(env: Record<string, string>, options: { cpuProfileDir?: string | undefined, build?: string, nodeFlags?: string[] } = {}): Promise<RunningProcess> {
  const cli = path.resolve(ROOT, options.build ?? 'dist', 'cli.js')
  if (!fs.existsSync(cli)) throw new Error(`${cli} is missing: run \`npm run build\` (npm run bench does), or give a build's output directory`)
  const profile = options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(options.cpuProfileDir)}`] : []
  return startProcess([...SERVER_NODE_FLAGS, ...(options.nodeFlags ?? []), ...profile, cli, 'serve'], {
    PORT: '0',
    NODE_ENV: 'production',
    RATE_LIMIT_PER_SECOND: '1000000',
    ...env,
  }, 'wishpay listening')
}

export function startHello(): Promise<RunningProcess> {
  return startProcess(['--import', 'tsx', 'bench/hello-server.ts'], {}, 'hello listening')
}

/** The hello-world plus the service's read of a payment (bench/lookup-server.ts), on the store of `env`. */
export function startLookup(env: Record<string, string>): Promise<RunningProcess> {
  return startProcess(['--import', 'tsx', 'bench/lookup-server.ts'], env, 'lookup listening')
}
