import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, test } from 'node:test'
import { logWriteSize } from '../../src/logger.js'

/**
 * The log destination keeps up with a busy event loop (logger.ts, logWriteSize) and holds no line past
 * the turn that logged it: an idle server's lines are not held back. Counted in turns of the loop, not in
 * time.
 */

const LOGGER = fileURLToPath(new URL('../../src/logger.ts', import.meta.url))
const LINES = 4000

/** A child logs `lines` lines at once, then counts busy turns of its loop until stdout (a file) holds them all. */
function turnsToWrite(lines = LINES): Promise<{ turns: number, bytes: number }> {
  const script = `
    import fs from 'node:fs'
    import { createLogger } from ${JSON.stringify(LOGGER)}
    const logger = createLogger({ logLevel: 'info' })
    for (let i = 0; i < ${lines}; i++) logger.info({ n: i, account_id: 'acct_${'x'.repeat(26)}', route: '/payments/:id', status: 200 }, 'request')
    let turns = 0
    const lines = () => fs.readFileSync('/proc/self/fd/1', 'utf8').split('\\n').length - 1
    while (lines() < ${lines} && turns < 1000) {
      // A turn of a loaded server: a millisecond of other work, then I/O callbacks.
      const until = Date.now() + 1
      while (Date.now() < until) {}
      await new Promise((resolve) => setImmediate(resolve))
      turns++
    }
    process.stderr.write(JSON.stringify({ turns, bytes: fs.statSync('/proc/self/fd/1').size }))
  `
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-log-'))
  const out = fs.openSync(path.join(dir, 'stdout.log'), 'w')
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', out, 'pipe'] })
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    child.on('error', reject)
    child.on('close', (code) => {
      fs.closeSync(out)
      fs.rmSync(dir, { recursive: true, force: true })
      if (code !== 0) reject(new Error(`child exited ${code}: ${stderr}`))
      else resolve(JSON.parse(stderr.slice(stderr.indexOf('{'))) as { turns: number, bytes: number })
    })
  })
}

describe('the log destination under a busy event loop', () => {
  test('a process alone on stdout writes a burst of lines in a few turns, not one PIPE_BUF a turn', async () => {
    const { turns, bytes } = await turnsToWrite()
    assert.ok(bytes > 4096 * 100, `the burst is large enough to tell (${bytes} bytes)`)
    // At one 4 KB write a turn it would take bytes / 4096 turns (over 100); a burst of this size fits in
    // one write now, give or take the writes the thread pool had not finished by a turn's end.
    assert.ok(turns < bytes / 4096 / 4, `${turns} turns for ${bytes} bytes`)
  })

  test('a line logged alone is written by the end of the next turn of the loop', async () => {
    const { turns } = await turnsToWrite(1)
    assert.ok(turns <= 1, `${turns} turns`)
  })

  test('a worker sharing stdout with its siblings keeps each write within PIPE_BUF', () => {
    assert.equal(logWriteSize(true), 4096)
    assert.ok(logWriteSize(false) >= 1024 * 1024)
  })
})
