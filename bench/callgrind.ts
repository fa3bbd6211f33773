/**
 * A node process run under valgrind's callgrind, which counts the instructions it executes: unlike
 * seconds, a count does not move with the machine's speed or with what else it runs (bench/instructions.ts).
 * The process starts with counting off (`--instr-atstart=no`, about ten times faster than counting), so a
 * warm-up is cheap; `measure` counts what one stretch of work costs and nothing else. Each thread gets
 * its own count (`--separate-threads=yes`): thread 1 is JavaScript's, the others V8's compiler and
 * garbage collector helpers and libuv's pool. The kernel's work (system calls) is not counted.
 */
import { execFile, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { perfMapLookup } from './perf-map.js'
import { ROOT } from './processes.js'

const run = promisify(execFile)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Whether valgrind (and its callgrind_control, callgrind_annotate) is installed. */
export async function valgrindVersion(): Promise<string | null> {
  try {
    return (await run('valgrind', ['--version'])).stdout.trim()
  } catch {
    return null
  }
}

export interface Counts {
  /** Every thread's instructions. */
  all: number
  /** Thread 1's: JavaScript, the event loop and what they call. */
  main: number
  /** Thread 1's profile as callgrind wrote it (for `annotate`); removed by `stop` unless kept. */
  mainFile: string
}

export interface CountedProcess {
  url: string
  pid: number
  /** Counts the instructions of `work` only: counting is switched on before it and read after it. */
  measure(work: () => Promise<void>): Promise<Counts>
  /** Stops the process and, unless `keep`, removes its files. */
  stop(keep?: boolean): Promise<void>
  /** The process's perf map (`--perf-basic-prof`): where its JIT-compiled functions lie. */
  perfMap: string
}

/**
 * Starts `node <args>` under callgrind, its stdout in a file, and resolves once a JSON line with `msg`
 * and `address` appears there (as bench/processes.ts does). `--perf-basic-prof` names the compiled
 * JavaScript functions that callgrind knows only by address.
 */
export async function startCounted(args: string[], env: Record<string, string>, readyMsg: string): Promise<CountedProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-callgrind-'))
  const logFile = path.join(dir, 'stdout.log')
  const out = fs.openSync(logFile, 'w')
  const child = spawn('valgrind', [
    '--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${path.join(dir, 'callgrind.out')}`,
    process.execPath, '--perf-basic-prof', ...args,
  ], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', out, 'pipe'] })
  fs.closeSync(out)
  // valgrind's own lines go to stderr; the process's stderr is shown only if it fails to start.
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4000) })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let gone = false
  void exited.then(() => { gone = true })
  const pid = child.pid!
  const control = (...options: string[]) => run('callgrind_control', [...options, String(pid)])
  const dumps = () => fs.readdirSync(dir).filter((name) => name.startsWith('callgrind.out'))
  let dumped = 0
  const removeFiles = () => {
    fs.rmSync(dir, { recursive: true, force: true })
    fs.rmSync(`/tmp/perf-${pid}.map`, { force: true })
  }
  // SIGTERM, then SIGKILL if it is still there after a minute: a stop never hangs the tool.
  const end = async () => {
    if (gone) return
    child.kill('SIGTERM')
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    await exited
    clearTimeout(killer)
  }
  let ready: { address?: string } | undefined
  try {
    for (let waited = 0; ready === undefined; waited += 100) {
      if (gone) throw new Error(`${args.join(' ')} exited early under valgrind: ${stderr}`)
      if (waited >= 600_000) throw new Error(`${args.join(' ')} did not start under valgrind within 10 minutes`)
      ready = fs.readFileSync(logFile, 'utf8').split('\n').map(jsonLine).find((line) => line?.msg === readyMsg && line.address)
      if (ready === undefined) await sleep(100)
    }
  } catch (error) {
    child.stderr!.destroy()
    await end()
    removeFiles()
    throw error
  }
  return {
    url: ready.address!,
    pid,
    perfMap: `/tmp/perf-${pid}.map`,
    async measure(work) {
      await control('--instr=on')
      await control('--zero')
      await work()
      const before = new Set(dumps())
      await control(`--dump=measured-${++dumped}`)
      const files = dumps().filter((name) => !before.has(name)).map((name) => path.join(dir, name))
      await control('--instr=off')
      const counts = files.map((file) => ({ file, count: summary(fs.readFileSync(file, 'utf8')) }))
      const main = counts.find(({ file }) => file.endsWith('-01'))
      if (!main) throw new Error(`callgrind wrote no dump of thread 1 (${files.join(', ')})`)
      return { all: counts.reduce((sum, { count }) => sum + count, 0), main: main.count, mainFile: main.file }
    },
    async stop(keep = false) {
      await end()
      if (!keep) removeFiles()
    },
  }
}

/** A line of the process's stdout as JSON, or undefined (a line half written, or not JSON). */
function jsonLine(line: string): { msg?: string, address?: string } | undefined {
  if (!line.startsWith('{')) return undefined
  try {
    return JSON.parse(line) as { msg?: string, address?: string }
  } catch {
    return undefined
  }
}

/** A dump's instruction count: its `summary:` line (older valgrinds write `totals:`). */
export function summary(dump: string): number {
  const line = /^(?:summary|totals): (\d+)/m.exec(dump)
  if (!line) throw new Error('a callgrind dump without a summary line')
  return Number(line[1])
}

/**
 * The functions of a dump that cost the most instructions themselves, as callgrind_annotate lists them,
 * with JIT-compiled JavaScript named from the perf map (`JS:*name file:line`; `*` optimised, `^` baseline,
 * `~` interpreted; the code the map last placed at the address, bench/perf-map.ts) and C++ names without
 * their arguments. Costs are divided by `requests`.
 */
export async function annotate(dumpFile: string, perfMapFile: string, requests: number, top: number): Promise<Array<{ name: string, perRequest: number, share: number }>> {
  const { stdout } = await run('callgrind_annotate', ['--threshold=100', dumpFile], { maxBuffer: 256 * 1024 * 1024 })
  const jit = perfMapLookup(fs.existsSync(perfMapFile) ? fs.readFileSync(perfMapFile, 'utf8') : '')
  const costs = new Map<string, number>()
  let total = 0
  for (const line of stdout.split('\n')) {
    const row = /^\s*([\d,]+) (?:\(\s*[\d.]+%\)\s+)?(.*)$/.exec(line)
    if (!row) continue
    const cost = Number(row[1]!.replaceAll(',', ''))
    if (row[2]!.includes('PROGRAM TOTALS')) {
      total = cost
      continue
    }
    const address = /\?\?\?:0x([0-9a-f]+) \[\?\?\?\]/.exec(row[2]!)
    const name = address ? jit(Number.parseInt(address[1]!, 16)) ?? row[2]! : row[2]!.replace(/^\?\?\?:/, '').replace(/\(.*$/, '')
    costs.set(name, (costs.get(name) ?? 0) + cost)
  }
  return [...costs].sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([name, cost]) => ({ name, perRequest: cost / requests, share: total > 0 ? cost / total : 0 }))
}
