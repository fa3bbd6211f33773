import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { call, createKeyWithCli, stopServer, waitFor } from '../helpers/processes.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type SqliteTestStore } from '../helpers/stores.js'

/**
 * A retry of the same bytes is known to match its key's record by the text it remembers of the request
 * that matched (src/http/retry-matches.ts). ACP's delegate_payment carries a card's number and CVC, which
 * Wishpay never keeps: its retries are fingerprinted in full (`bodyHoldsSecrets`), and this holds that no
 * copy of the request's text outlives the request, in a real server's heap. Another process, so that the
 * heap holds nothing of the test's own, nor of app.inject's (which keeps its last request until a later turn).
 */

const ACP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/protocols/acp-2026-04-17')
const examples = JSON.parse(fs.readFileSync(path.join(ACP, 'examples.delegate_payment.json'), 'utf8'))
const PATH = '/agentic_commerce/delegate_payment'
const VERSION = '2026-04-17'

describe('a retried ACP delegation in a server process', () => {
  let store: SqliteTestStore
  let server: ServerProcess
  let dir: string
  before(async () => {
    store = await openStore('sqlite')
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-heap-'))
    // SIGUSR2 writes a heap snapshot into dir.
    server = await startServer({ ...store.env, NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}` })
  })
  after(async () => {
    if (server) await stopServer(server)
    await store.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  test('replays, and leaves no copy of its text, with the card number and CVC, in the server\'s memory', async () => {
    const { key } = await createKeyWithCli(store.env, `acp-memory-${randomUUID()}`)
    const body = structuredClone(examples.delegate_payment_request)
    const now = new Date()
    body.allowance.expires_at = new Date(now.getTime() + 3600_000).toISOString()
    body.payment_method.exp_year = String(now.getUTCFullYear() + 2)
    const headers = { 'api-version': VERSION, 'idempotency-key': randomUUID() }
    const first = await call(server.url, key, 'POST', PATH, body, headers)
    assert.equal(first.status, 201, first.raw)
    for (let i = 0; i < 3; i++) {
      const again = await call(server.url, key, 'POST', PATH, body, headers)
      assert.equal(again.headers['idempotent-replayed'], 'true', again.raw)
      assert.equal(again.raw, first.raw)
    }

    server.child.kill('SIGUSR2')
    // The snapshot is written in pieces: it is whole once its text parses as JSON (a partial one throws,
    // and waitFor tries again).
    const file = await waitFor(async () => {
      const name = fs.readdirSync(dir).find((f) => f.endsWith('.heapsnapshot'))
      if (name === undefined) return undefined
      const text = fs.readFileSync(path.join(dir, name), 'utf8')
      JSON.parse(text)
      return text
    }, 60_000, 'the server\'s heap snapshot')
    // The parsed body holds the number and the CVC as separate names and values (garbage once the request
    // ended); only the request's text holds them written as JSON members. The snapshot is JSON: a string's
    // quotes are escaped in it.
    const held = (name: string, value: string) => file.includes(JSON.stringify(`"${name}":"${value}"`).slice(1, -1))
    assert.ok(!held('number', body.payment_method.number), 'a copy of the request\'s text, with the card number, is in the server\'s memory')
    assert.ok(!held('cvc', body.payment_method.cvc), 'a copy of the request\'s text, with the CVC, is in the server\'s memory')
    // The same search finds what the replay cache holds of the answer (the check can see a string).
    assert.ok(file.includes(JSON.stringify(`"id":"${first.body.id}"`).slice(1, -1)), 'the answer the replay cache holds is in the snapshot')
  })
})
