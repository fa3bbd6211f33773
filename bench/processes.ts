import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export interface RunningProcess {
  url: string
  pid: number
  /** Peak resident set size so far, in MB (VmHWM). */
  peakRssMb(): number
  stop(): Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Starts a node process whose stdout goes to a file (the kernel writes it, the harness does not read
 * it), and resolves once a JSON line with `msg` and an `address` appears there.
 */
export async function startProcess(args: string[], env: Record<string, string>, readyMsg: string): Promise<RunningProcess> {
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-bench-')), 'stdout.log')
  const out = fs.openSync(logFile, 'w')
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', out, 'inherit'] })
  fs.closeSync(out)
  let exited = false
  child.on('exit', () => { exited = true })
  for (let waited = 0; waited < 60_000; waited += 50) {
    if (exited) throw new Error(`${args.join(' ')} exited early; see ${logFile}`)
    const ready = fs.readFileSync(logFile, 'utf8').split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg?: string, address?: string })
      .find((line) => line.msg === readyMsg && line.address)
    if (ready) {
      return {
        url: ready.address!,
        pid: child.pid!,
        peakRssMb: () => {
          const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8')
          return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024)
        },
        stop: async () => {
          if (!exited) {
            const gone = new Promise((resolve) => child.once('exit', resolve))
            child.kill('SIGTERM')
            await gone
          }
          fs.rmSync(path.dirname(logFile), { recursive: true, force: true })
        },
      }
    }
    await sleep(50)
  }
  child.kill('SIGKILL')
  throw new Error(`${args.join(' ')} did not start; see ${logFile}`)
}

/**
 * Wishpay as deployed: the compiled dist/ (`npm run bench` builds it first), production mode, info logs
 * (one line per request), a limit no run reaches.
 */
export function startWishpay(env: Record<string, string>): Promise<RunningProcess> {
  if (!fs.existsSync(path.join(ROOT, 'dist/cli.js'))) throw new Error('dist/cli.js is missing: run `npm run build` (npm run bench does)')
  return startProcess(['dist/cli.js', 'serve'], {
    PORT: '0',
    NODE_ENV: 'production',
    RATE_LIMIT_PER_SECOND: '1000000',
    ...env,
  }, 'wishpay listening')
}

export function startHello(): Promise<RunningProcess> {
  return startProcess(['--import', 'tsx', 'bench/hello-server.ts'], {}, 'hello listening')
}
