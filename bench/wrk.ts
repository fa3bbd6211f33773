/**
 * The same scenarios through wrk (issue 17: figures must survive another load generator). wrk is C,
 * so it takes less of the two cores than autocannon does, and it measures latency its own way; the
 * table shows both. `-t2 -c<connections> --latency`, the request built by bench/wrk.lua.
 */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import path from 'node:path'
import { promisify } from 'node:util'
import { ROOT } from './processes.js'
import type { LoadOptions } from './scenarios.js'

const run = promisify(execFile)

export interface WrkResult {
  requestsPerSecond: number
  p50: number
  p99: number
  /** Non-2xx answers (wrk counts status > 399) and socket errors: connect, read, write, timeout. */
  errors: number
  requests: number
}

/** Whether wrk is installed: the harness prints `n/a` in its columns otherwise. */
export async function wrkVersion(): Promise<string | null> {
  try {
    // wrk -v prints its version and usage and exits with 1.
    const { stdout } = await run('wrk', ['-v']).catch((error: { stdout?: string, code?: unknown }) => {
      if (typeof error.stdout === 'string' && error.stdout.startsWith('wrk')) return { stdout: error.stdout }
      throw error
    })
    return stdout.split('\n')[0]!.trim()
  } catch {
    return null
  }
}

/** The request is LoadOptions' (bench/wrk.lua builds it); every non-2xx answer or socket error counts as an error. */
export async function wrk(options: LoadOptions): Promise<WrkResult> {
  if (options.warmupSeconds) await measure({ ...options, durationSeconds: options.warmupSeconds })
  return measure(options)
}

async function measure(options: LoadOptions): Promise<WrkResult> {
  const args = [
    '-t2', `-c${options.connections}`, `-d${options.durationSeconds}s`, '--latency',
    // autocannon's timeout: a slow answer counts in the latency, not as an error.
    '--timeout', '10s',
    '-s', path.join(ROOT, 'bench/wrk.lua'),
    new URL(options.path, options.url).toString(),
    '--', options.method ?? 'GET', options.key ? `Bearer ${options.key}` : '', options.body ?? '',
    // Keys of this run differ from those of every other run (warm-up included).
    randomUUID(), ...(options.mandates ?? []),
  ]
  const { stdout } = await run('wrk', args, { maxBuffer: 1 << 20 })
  const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'))
  if (!line) throw new Error(`wrk printed no result line:\n${stdout}`)
  const r = JSON.parse(line) as { requests: number, durationUs: number, p50Us: number, p99Us: number, connect: number, read: number, write: number, status: number, timeout: number }
  // wrk's own Requests/sec line (completed requests over the run's duration), as a user reads it.
  const perSecond = /Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]
  return {
    requestsPerSecond: perSecond ? Number(perSecond) : r.requests / (r.durationUs / 1e6),
    p50: Math.round(r.p50Us / 100) / 10,
    p99: Math.round(r.p99Us / 100) / 10,
    errors: r.connect + r.read + r.write + r.status + r.timeout,
    requests: r.requests,
  }
}
