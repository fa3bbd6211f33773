import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createParser } from 'eventsource-parser'
import { MAX_STREAMS_PER_ACCOUNT } from '../../src/modules/events/stream.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { createMandate, createSucceededPayment, createWish, getData } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/processes.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * GET /events/stream (src/modules/events/stream.ts) over real HTTP: live events, resumption with
 * Last-Event-ID and starting_after, no event twice or missing where replay meets live, filters, auth,
 * the per-account limit, and a closing server ending its streams.
 */

interface Message { id: string, event: string, data: string }

interface Stream {
  status: number
  /** The error envelope, when the answer was not a stream. */
  error: any
  /** The id of the first message: the position the stream starts after. */
  start(): string | undefined
  messages: Message[]
  comments: string[]
  /** Resolves when the server ends the stream. */
  ended: Promise<void>
  close(): void
}

/** Opens the stream as an SSE client would, reading it in the background. */
async function openStream(base: string, key: string | null, options: { query?: string, headers?: Record<string, string> } = {}): Promise<Stream> {
  const abort = new AbortController()
  const res = await fetch(`${base}/events/stream${options.query ? `?${options.query}` : ''}`, {
    headers: { ...(key !== null ? { authorization: `Bearer ${key}` } : {}), ...options.headers },
    signal: abort.signal,
  })
  const messages: Message[] = []
  const comments: string[] = []
  let start: string | undefined
  if (!res.ok) {
    const error = await res.json()
    return { status: res.status, error, start: () => undefined, messages, comments, ended: Promise.resolve(), close: () => {} }
  }
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/)
  const parser = createParser({
    onId: (id) => { start ??= id },
    onEvent: (m) => { messages.push({ id: m.id!, event: m.event!, data: m.data }) },
    onComment: (c) => { comments.push(c) },
  })
  const ended = (async () => {
    try {
      for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) parser.feed(chunk)
    } catch (error) {
      if (!abort.signal.aborted) throw error
    }
  })()
  return { status: res.status, error: undefined, start: () => start, messages, comments, ended, close: () => abort.abort() }
}

/** The account's event ids in id order, the stream's order (GET /events is by created_at, which can differ within a millisecond or two). */
async function eventIds(a: TestAccount): Promise<string[]> {
  const ids: string[] = []
  for (let offset = 0; ; offset += 100) {
    const page = (await a.request('GET', `/events?limit=100&offset=${offset}`)).body
    ids.push(...page.data.map((e: any) => e.id as string))
    if (ids.length >= page.meta.total) return ids.sort()
  }
}

const until = <T>(probe: () => T | undefined | false, what: string, timeoutMs = 20_000) =>
  waitFor(async () => probe() || undefined, timeoutMs, what, 50)

for (const kind of storeKinds()) {
  describe(`GET /events/stream (${kind.name})`, () => {
    let t: TestApp
    let base: string
    const open: Stream[] = []
    const stream = async (...args: Parameters<typeof openStream>) => {
      const s = await openStream(...args)
      open.push(s)
      return s
    }

    before(async () => {
      t = await startTestApp(kind)
      base = await t.app.listen({ port: 0, host: '127.0.0.1' })
    })
    after(async () => {
      for (const s of open) s.close()
      // Drop the sockets the streams' clients leave open, rather than wait for them to time out.
      t.app.server.closeAllConnections()
      await t.close()
    })

    test('an event written after connecting arrives with its id, its type and the event exactly as GET /events/:id has it', async () => {
      const a = await t.account()
      const s = await stream(base, a.key)
      assert.equal(s.status, 200)
      await until(() => s.start(), 'the first message')
      assert.match(s.start()!, /^evt_[0-9a-z]{26}$/)
      const wish = await createWish(a)
      await until(() => s.messages.length === 1, 'wish.created')
      const [m] = s.messages
      assert.equal(m!.event, 'wish.created')
      const event = await getData(a, `/events/${m!.id}`)
      assert.equal(event.data.object.id, wish.id)
      assert.equal(m!.data, JSON.stringify(event), 'data is the event JSON, byte for byte')
    })

    test('Last-Event-ID replays what came after that event, then goes live; starting_after does the same, and the header wins', async () => {
      const a = await t.account()
      for (let i = 0; i < 3; i++) await createWish(a, { query: `replay ${i}` })
      const [first, ...rest] = await eventIds(a)
      const s = await stream(base, a.key, { headers: { 'last-event-id': first! } })
      await until(() => s.messages.length === 2, 'the two later events')
      assert.deepEqual(s.messages.map((m) => m.id), rest)
      await createWish(a, { query: 'live' })
      await until(() => s.messages.length === 3, 'the live event')
      assert.deepEqual(s.messages.map((m) => m.id), (await eventIds(a)).slice(1))

      const q = await stream(base, a.key, { query: `starting_after=${rest[0]}` })
      await until(() => q.messages.length === 2, 'events after starting_after')
      assert.deepEqual(q.messages.map((m) => m.id), (await eventIds(a)).slice(2))
      const both = await stream(base, a.key, { query: `starting_after=${first}`, headers: { 'last-event-id': rest[1]! } })
      await until(() => both.messages.length === 1, 'events after the header\'s id')
      assert.deepEqual(both.messages.map((m) => m.id), (await eventIds(a)).slice(3))
      for (const x of [s, q, both]) x.close()
    })

    test('events written while streams open, drop and resume: every stream gets each event once, in order, none missing', async () => {
      const a = await t.account()
      await createWish(a, { query: 'before' })
      const [from] = await eventIds(a)
      let writing = true
      let written = 0
      const writer = (async () => {
        while (writing || written < 30) {
          await Promise.all([0, 1, 2].map((i) => createWish(a, { query: `concurrent ${written}-${i}` })))
          written += 3
        }
      })()
      // One stream reads throughout; another is cut twice and resumed from the last id it had.
      const whole = await stream(base, a.key, { headers: { 'last-event-id': from! } })
      const received: string[] = []
      let cut = await stream(base, a.key, { headers: { 'last-event-id': from! } })
      for (let i = 0; i < 2; i++) {
        await until(() => cut.messages.length >= 3, 'some events before the cut')
        cut.close()
        received.push(...cut.messages.map((m) => m.id))
        cut = await stream(base, a.key, { headers: { 'last-event-id': received.at(-1)! } })
      }
      writing = false
      await writer
      const expected = (await eventIds(a)).slice(1)
      assert.equal(expected.length, written)
      await until(() => whole.messages.length >= expected.length && received.length + cut.messages.length >= expected.length, 'every event on both streams')
      assert.deepEqual(whole.messages.map((m) => m.id), expected)
      assert.deepEqual([...received, ...cut.messages.map((m) => m.id)], expected)
      whole.close()
      cut.close()
    })

    test('types filters; a read key may stream; no key is 401; a bad Last-Event-ID, starting_after or type is 400', async () => {
      const a = await t.account()
      const s = await stream(base, a.readKey, { query: 'types=payment.succeeded,mandate.consumed' })
      assert.equal(s.status, 200)
      await until(() => s.start(), 'the first message')
      const mandate = await createMandate(t, a, { usage: 'single_use' })
      const payment = await createSucceededPayment(a, mandate.id)
      await until(() => s.messages.length === 2, 'payment.succeeded and mandate.consumed')
      assert.deepEqual(s.messages.map((m) => m.event).sort(), ['mandate.consumed', 'payment.succeeded'])
      assert.equal(JSON.parse(s.messages.find((m) => m.event === 'payment.succeeded')!.data).data.object.id, payment.id)
      s.close()

      const none = await stream(base, null)
      assert.equal(none.status, 401)
      assert.equal(none.error.error.code, 'authentication_required')
      for (const [options, param] of [
        [{ headers: { 'last-event-id': 'evt_nope' } }, 'Last-Event-ID'],
        [{ query: 'starting_after=wish_01jf3v7k8m2n4p6q8r0s2t4v6w' }, 'starting_after'],
        [{ query: 'types=payment.succeeded,payment.teleported' }, 'types'],
        [{ query: 'colour=red' }, 'colour'],
      ] as const) {
        const bad = await stream(base, a.key, options)
        assert.equal(bad.status, 400, JSON.stringify(options))
        assert.equal(bad.error.error.type, 'invalid_request_error')
        assert.equal(bad.error.error.param, param)
      }
    })

    test(`an account has at most ${MAX_STREAMS_PER_ACCOUNT} streams open; one more is 400 resource_limit_exceeded until one closes`, async () => {
      const a = await t.account()
      const streams = []
      for (let i = 0; i < MAX_STREAMS_PER_ACCOUNT; i++) streams.push(await stream(base, a.key))
      assert.deepEqual(streams.map((s) => s.status), streams.map(() => 200))
      const over = await stream(base, a.key)
      assert.equal(over.status, 400)
      assert.equal(over.error.error.code, 'resource_limit_exceeded')
      assert.equal((await stream(base, (await t.account()).key)).status, 200, 'another account is not affected')
      streams[0]!.close()
      const again = await waitFor(async () => {
        const s = await stream(base, a.key)
        return s.status === 200 ? s : undefined
      }, 20_000, 'a slot freed by the closed stream')
      again.close()
      for (const s of streams) s.close()
    })

    test('closing the server ends its open streams, and its close does not wait for them', { timeout: 60_000 }, async () => {
      const other = await startTestApp(kind)
      try {
        const url = await other.app.listen({ port: 0, host: '127.0.0.1' })
        const a = await other.account()
        const streams = await Promise.all([openStream(url, a.key), openStream(url, a.key)])
        await until(() => streams.every((s) => s.start()), 'both streams open')
        await other.app.close()
        await Promise.all(streams.map((s) => s.ended))
      } finally {
        await other.close().catch(() => {})
      }
    })
  })
}
