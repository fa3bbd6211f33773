import assert from 'node:assert/strict'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { runNode } from '../helpers/cli.js'
import { createKeyWithCli, stopServer } from '../helpers/processes.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type SqliteTestStore } from '../helpers/stores.js'

/**
 * The examples in examples/ run as a user would run them: a real `wishpay serve` on SQLite, a key made
 * with the CLI, and the script as its own process with only WISHPAY_URL and WISHPAY_API_KEY.
 */

/** An example as its own process, with only this environment (plus PATH). */
const runExample = (file: string, env: Record<string, string>) => runNode(['--import', 'tsx', path.join('examples', file)], env, file)

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

  test('examples/acp-delegate-payment.ts delegates a card, replays the retry, shows the token, pays once and is refused the second time', async () => {
    const { key } = await createKeyWithCli(store.env, 'acp-delegate-payment')
    const run = await runExample('acp-delegate-payment.ts', { WISHPAY_URL: server.url, WISHPAY_API_KEY: key })
    assert.equal(run.code, 0, `exit ${run.code}:\n${run.stdout}\n${run.stderr}`)
    assert.match(run.stdout, /vault token vt_\w+, created /)
    assert.match(run.stdout, /replayed: Idempotent-Replayed: true, same token vt_\w+/)
    assert.match(run.stdout, /card kept as brand visa, last4 4242, fingerprint [\w-]{43} \(no number, no CVC\)/)
    assert.match(run.stdout, /payment pay_\w+: succeeded, 1500 USD, protocol acp/)
    assert.match(run.stdout, /refused: 422 mandate_consumed/)
    assert.match(run.stdout, /vault token vt_\w+ is now consumed/)
    assert.match(run.stdout, /ACP delegate payment example complete\./)
    assert.ok(!run.stdout.includes('4242424242424242'), 'the example never prints the card number')
  })

  test('examples/acp-delegate-payment.ts exits non-zero without a secret key', async () => {
    const run = await runExample('acp-delegate-payment.ts', { WISHPAY_URL: server.url, WISHPAY_API_KEY: 'rk_not-a-secret-key' })
    assert.equal(run.code, 1)
    assert.match(run.stderr, /WISHPAY_API_KEY/)
  })

  test('examples/ap2-walkthrough.ts exits non-zero without a secret key', async () => {
    const run = await runExample('ap2-walkthrough.ts', { WISHPAY_URL: server.url, WISHPAY_API_KEY: 'rk_not-a-secret-key' })
    assert.equal(run.code, 1)
    assert.match(run.stderr, /WISHPAY_API_KEY/)
  })
})
