import { type ChildProcess, spawn } from 'node:child_process'
import { ROOT, WISHPAY_BIN } from './cli.js'

export interface ServerProcess {
  url: string
  child: ChildProcess
  /** Everything the process wrote to stdout so far. */
  output(): string
  /** JSON log lines written so far. */
  logs(): Record<string, unknown>[]
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Starts `wishpay serve` on a free port and resolves once it listens. The bound only matters when start-up
 * is broken: on a loaded 2-core machine tsx's first compile of the sources has taken over 30 s.
 */
export function startServer(env: Record<string, string>, timeoutMs = 120_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, [WISHPAY_BIN, 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', EVENT_STREAM_SETTLE_MS: '200', EVENT_STREAM_POLL_MS: '50', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const logs = () => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`server did not start:\n${stdout}\n${stderr}`)) }, timeoutMs)
    child.stderr!.on('data', (chunk) => { stderr += chunk })
    child.stdout!.on('data', (chunk) => {
      stdout += chunk
      const listening = logs().find((l) => l.msg === 'wishpay listening')
      if (listening) {
        clearTimeout(timer)
        resolve({
          url: String(listening.address),
          child,
          output: () => stdout,
          logs,
          stop: (signal = 'SIGTERM') => { child.kill(signal); return exited },
        })
      }
    })
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`server exited with ${code}:\n${stdout}\n${stderr}`)) })
  })
}
