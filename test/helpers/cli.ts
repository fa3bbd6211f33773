import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const WISHPAY_BIN = path.join(ROOT, 'bin/wishpay.js')

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs node with these arguments and exactly this environment (plus PATH), collecting its output. */
export function runNode(args: string[], env: Record<string, string>, label: string, timeoutMs = 120_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => { stdout += chunk })
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${label} timed out:\n${stdout}\n${stderr}`)) }, timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** Runs the real `wishpay` command with exactly this environment (plus PATH). */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<CliResult> {
  return runNode([WISHPAY_BIN, ...args], env, `wishpay ${args.join(' ')}`, timeoutMs)
}
