import assert from 'node:assert/strict'
import { runCli } from './cli.js'
import type { ServerProcess } from './server.js'
import { fromFetch, type Response } from './response.js'

/** An authenticated JSON request to a server process. */
export async function call(baseUrl: string, key: string, method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...extraHeaders }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  })
  return fromFetch(res, await res.text())
}

/** Creates a write key with the real CLI against the store `env` points at; returns the secret. */
export async function createKeyWithCli(env: Record<string, string>, account: string): Promise<{ id: string, key: string, account_id: string }> {
  const result = await runCli(['keys', 'create', '--account', account, '--json'], env)
  assert.equal(result.code, 0, `wishpay keys create failed:\n${result.stdout}\n${result.stderr}`)
  return JSON.parse(result.stdout) as { id: string, key: string, account_id: string }
}

/**
 * Sends `signal` and waits up to `timeoutMs` for the process to exit; a process still running then is
 * SIGKILLed. Resolves with the exit code (null when it ended by a signal) and whether it had to be killed.
 */
export async function stopServer(server: ServerProcess, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<{ code: number | null, killed: boolean }> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) {
    return { code: server.child.exitCode, killed: false }
  }
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), timeoutMs) })
  const outcome = await Promise.race([server.stop(signal), timedOut])
  clearTimeout(timer)
  if (outcome !== 'timeout') return { code: outcome, killed: false }
  const code = await server.stop('SIGKILL')
  return { code, killed: true }
}

/** SIGKILLs a process that may still run, and waits for it to be gone. Never throws. */
export async function killServer(server: ServerProcess): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return
  await server.stop('SIGKILL')
}

/** Polls `probe` every `intervalMs` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await probe()
      if (value !== undefined) return value
    } catch (error) {
      last = error
    }
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/** An expires_at an hour ahead. */
export function inAnHour(): string {
  return new Date(Date.now() + 3_600_000).toISOString()
}
