import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createParser } from 'eventsource-parser'
import { call, createKeyWithCli, killServer, stopServer, waitFor } from '../helpers/processes.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * GET /events/stream across processes: two `wishpay serve` on one PostgreSQL; an event written through
 * one reaches a stream open on the other, and SIGTERM ends the stream and exits 0.
 */

const pgUrl = process.env.TEST_DATABASE_URL

describe('event stream across two server processes on one PostgreSQL', { skip: !pgUrl && 'needs PostgreSQL (TEST_DATABASE_URL)' }, () => {
  let store: TestStore | undefined
  const servers: ServerProcess[] = []
  let key = ''

  before(async () => {
    store = await openStore('postgres')
    const env = store.env
    for (const started of await Promise.allSettled([startServer(env), startServer(env)])) {
      if (started.status === 'rejected') throw started.reason
      servers.push(started.value)
    }
    key = (await createKeyWithCli(env, 'stream-multiprocess')).key
  })
  after(async () => {
    try {
      for (const s of servers) await stopServer(s)
    } finally {
      for (const s of servers) await killServer(s)
      await store?.close()
    }
  })

  test('a wish created through process A arrives on a stream of process B; SIGTERM on B ends the stream, exit 0', async () => {
    const [a, b] = servers as [ServerProcess, ServerProcess]
    const res = await fetch(`${b.url}/events/stream`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(res.status, 200)
    const received: { id: string, event: string, data: string }[] = []
    let opened = false
    const parser = createParser({
      onId: () => { opened = true },
      onEvent: (m) => { received.push({ id: m.id!, event: m.event!, data: m.data }) },
    })
    const ended = (async () => {
      for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) parser.feed(chunk)
    })()
    await waitFor(async () => opened || undefined, 30_000, 'the stream open')

    const wish = await call(a.url, key, 'POST', '/wishes', { query: 'written on A' })
    assert.equal(wish.status, 201, wish.raw)
    await waitFor(async () => received.length > 0 || undefined, 30_000, 'the event on B')
    assert.equal(received[0]!.event, 'wish.created')
    assert.equal(JSON.parse(received[0]!.data).data.object.id, wish.body.data.id)

    assert.deepEqual(await stopServer(b), { code: 0, killed: false }, 'B exits 0 with a stream open')
    await ended
  })
})
