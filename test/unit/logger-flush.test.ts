import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, test } from 'node:test'

/**
 * The server's logger holds a turn's lines and writes them at its end (logger.ts): lines logged just
 * before the process ends must still reach stdout, whether it exits normally, through process.exit (as the SIGTERM drain
 * does), or on an uncaught error. Each case runs a child whose stdout is a pipe, as under a supervisor.
 */

const LOGGER = fileURLToPath(new URL('../../src/logger.ts', import.meta.url))
const LINES = 2000

/** Runs `ending` after logging LINES lines (with a secret in each) and returns the child's stdout and exit code. */
function run(ending: string): Promise<{ stdout: string, code: number | null }> {
  const script = `
    import { createLogger } from ${JSON.stringify(LOGGER)}
    const logger = createLogger({ logLevel: 'info' })
    for (let i = 0; i < ${LINES}; i++) logger.info({ n: i, key: 'sk_${'a'.repeat(32)}' }, 'line')
    ${ending}
  `
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.on('error', reject)
    child.on('close', (code) => resolve({ stdout, code }))
  })
}

function assertAllLines(stdout: string): void {
  const lines = stdout.split('\n').filter((line) => line.startsWith('{'))
  assert.equal(lines.length, LINES, 'every line logged reached stdout')
  const last = JSON.parse(lines.at(-1)!) as { n: number, key: string }
  assert.equal(last.n, LINES - 1)
  assert.equal(last.key, '[redacted]', 'redaction is unchanged')
  assert.ok(!stdout.includes('sk_aaaa'), 'no key reaches the output')
}

describe('the lines the log destination holds are written when the process ends', () => {
  test('on a normal exit', async () => {
    const { stdout, code } = await run('')
    assert.equal(code, 0)
    assertAllLines(stdout)
  })

  test('on process.exit, as after the SIGTERM drain', async () => {
    const { stdout, code } = await run('process.exit(0)')
    assert.equal(code, 0)
    assertAllLines(stdout)
  })

  test('on a fatal error', async () => {
    const { stdout, code } = await run('throw new Error("fatal")')
    assert.equal(code, 1)
    assertAllLines(stdout)
  })
})
