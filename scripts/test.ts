/**
 * `npm test [-- FILE… | --node-test-flag=value…]`: node's test runner (through tsx) over
 * test/*\/*.test.ts, or only the files given, two files at a time, with the reporter chosen here rather
 * than left implicit: `spec` on a terminal (one readable line per test; the summary, then any failures,
 * at the end), `tap` otherwise and whenever CI is set (the output ends with node's `# tests N`,
 * `# pass N`, `# fail N` lines, which CI reads). TEST_REPORTER overrides it (spec, tap, dot, junit...).
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const TEST_DIR = path.join(ROOT, 'test')

/** test/*\/*.test.ts, as the shell's glob gave it: the default set. */
function allTestFiles(): string[] {
  return fs.readdirSync(TEST_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => fs.readdirSync(path.join(TEST_DIR, d.name)).filter((f) => f.endsWith('.test.ts')).map((f) => path.join('test', d.name, f)))
    .sort()
}

/** A file as given; a directory as the *.test.ts files under it (node 20 looks there for .js tests only). */
function testFilesOf(given: string): string[] {
  if (!fs.statSync(given).isDirectory()) return [given]
  return fs.readdirSync(given, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts')).map((f) => path.join(given, f)).sort()
}

function reporter(): string {
  const chosen = process.env.TEST_REPORTER?.trim()
  if (chosen) return chosen
  return process.stdout.isTTY && !process.env.CI ? 'spec' : 'tap'
}

const args = process.argv.slice(2)
// What names an existing file or directory is a test to run; everything else goes to node as is
// (give flags their value with `=`: --test-name-pattern=refund).
const files = args.filter((a) => !a.startsWith('-') && fs.existsSync(a))
const flags = args.filter((a) => !files.includes(a))
const given = (flag: string) => flags.some((f) => f === flag || f.startsWith(`${flag}=`))

const nodeArgs = [
  '--import', 'tsx', '--test',
  ...(given('--test-concurrency') ? [] : ['--test-concurrency=2']),
  ...(given('--test-reporter') ? [] : [`--test-reporter=${reporter()}`, '--test-reporter-destination=stdout']),
  ...flags,
  ...(files.length > 0 ? files.flatMap(testFilesOf) : allTestFiles()),
]

const child = spawn(process.execPath, nodeArgs, { cwd: process.cwd(), stdio: 'inherit' })
// Ctrl-C reaches the runner through the terminal; a signal sent to this process alone is passed on.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal))
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
