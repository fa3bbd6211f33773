import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { ROOT } from '../helpers/cli.js'
import { createKeyWithCli, stopServer } from '../helpers/processes.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type SqliteTestStore } from '../helpers/stores.js'

/**
 * The examples in examples/ run as a user would run them: a real `wishpay serve` on SQLite, a key made
 * with the CLI, and the script as its own process with only WISHPAY_URL and WISHPAY_API_KEY.
 */

interface Run { code: number | null, stdout: string, stderr: string }

function runExample(file: string, env: Record<string, string>, timeoutMs = 120_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join('examples', file)], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => { stdout += chunk })
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${file} timed out:\n${stdout}\n${stderr}`)) }, timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }) })
  })
}

describe('examples', () => {
  let store: SqliteTestStore
  let server: ServerProcess
  before(async () => {
    store = await openStore('sqlite')
    server = await startServer(store.env)
  })
  after(async () => {
    if (server) await stopServer(server)
    await store.close()
  })

  test('examples/ap2-walkthrough.ts pays once with a closed mandate, is refused on replay, and verifies the receipt', async () => {
    const { key } = await createKeyWithCli(store.env, 'ap2-walkthrough')
    const run = await runExample('ap2-walkthrough.ts', { WISHPAY_URL: server.url, WISHPAY_API_KEY: key })
    assert.equal(run.code, 0, `exit ${run.code}:\n${run.stdout}\n${run.stderr}`)
    assert.match(run.stdout, /refused: 422 mandate_replayed/)
    assert.match(run.stdout, /receipt verified \(ES256, kid [\w-]+\)/)
    assert.match(run.stdout, /"status": "Success"/)
    assert.match(run.stdout, /AP2 walkthrough complete\./)
  })

  test('examples/ap2-walkthrough.ts exits non-zero without a secret key', async () => {
    const run = await runExample('ap2-walkthrough.ts', { WISHPAY_URL: server.url, WISHPAY_API_KEY: 'rk_not-a-secret-key' })
    assert.equal(run.code, 1)
    assert.match(run.stderr, /WISHPAY_API_KEY/)
  })
})
