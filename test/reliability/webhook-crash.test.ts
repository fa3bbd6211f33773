import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { call, createKeyWithCli, killServer, stopServer, waitFor } from '../helpers/processes.js'
import { freePort, type Receiver, startReceiver, verifyDelivery } from '../helpers/receiver.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { openStore, type TestStore } from '../helpers/stores.js'

/**
 * Webhooks are never lost on a crash (contract section 7): deliveries still pending when a server is
 * SIGKILLed (its endpoint was not answering yet) are delivered by the next process on the same store,
 * each signed so that the receiver verifies it.
 */

const WISHES = 5
const POLL_MS = 30_000
const DELIVER_JOB = 'webhook.deliver'

async function deliveriesSurviveKill(store: TestStore, note: (message: string) => void): Promise<void> {
  const servers: ServerProcess[] = []
  let receiver: Receiver | undefined
  try {
    // Nothing listens here until the first server is gone: every attempt it makes is refused.
    const port = await freePort()
    const env = { ...store.env, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCALE: '0.001', LOG_LEVEL: 'info' }
    const first = await startServer(env)
    servers.push(first)
    const { key } = await createKeyWithCli(store.env, 'webhook-crash-test')

    const endpoint = await call(first.url, key, 'POST', '/webhook_endpoints', { url: `http://127.0.0.1:${port}/hooks`, events: ['*'] })
    assert.equal(endpoint.status, 201, endpoint.raw)
    const { id: endpointId, secret } = endpoint.body.data as { id: string, secret: string }
    for (let i = 0; i < WISHES; i++) {
      const wish = await call(first.url, key, 'POST', '/wishes', { query: `crash wish ${i}` })
      assert.equal(wish.status, 201, wish.raw)
    }
    const listed = await call(first.url, key, 'GET', '/events?limit=100')
    assert.equal(listed.status, 200, listed.raw)
    const events = listed.body.data as Array<{ id: string, type: string }>
    assert.deepEqual(events.map((e) => e.type), Array.from({ length: WISHES }, () => 'wish.created'))
    const eventIds = events.map((e) => e.id).sort()

    // The first server tries, fails (connection refused) and schedules retries.
    await waitFor(async () => {
      const res = await call(first.url, key, 'GET', `/webhook_endpoints/${endpointId}/deliveries?limit=100`)
      const tried = new Set((res.body.data as Array<{ event_id: string }>).map((a) => a.event_id))
      return tried.size === WISHES ? true : undefined
    }, 10_000, 'a first failed attempt at every event', 50)
    const failed = await call(first.url, key, 'GET', `/webhook_endpoints/${endpointId}/deliveries?limit=100`)
    for (const attempt of failed.body.data as Array<{ status_code: number | null, succeeded: boolean, error: string | null }>) {
      assert.equal(attempt.succeeded, false)
      assert.equal(attempt.status_code, null)
      assert.equal(typeof attempt.error, 'string')
    }

    first.child.kill('SIGKILL')
    await killServer(first)
    assert.equal(first.child.signalCode, 'SIGKILL')

    const db = store.db
    const jobs = await db.kysely.selectFrom('jobs').selectAll().where('type', '=', DELIVER_JOB).execute()
    assert.equal(jobs.length, WISHES, 'every delivery is still queued after the kill')
    assert.deepEqual(jobs.map((j) => (JSON.parse(j.payload) as { event_id: string }).event_id).sort(), eventIds)
    // A job the killed process held stays its own until the lease runs out (PostgreSQL).
    const leaseEnd = Math.max(0, ...jobs.map((j) => (j.locked_until ? Date.parse(j.locked_until) : 0)))
    const budget = Math.max(POLL_MS, leaseEnd - Date.now() + 10_000)
    if (leaseEnd > 0) note(`the killed process held a lease until ${new Date(leaseEnd).toISOString()}; waiting up to ${budget} ms`)

    receiver = await startReceiver({ port, secret })
    const second = await startServer(env)
    servers.push(second)
    const r = receiver
    await waitFor(async () => (eventIds.every((id) => r.ids().includes(id)) ? true : undefined), budget, `all ${WISHES} events at the receiver`, 100)

    for (const d of r.deliveries) {
      assert.equal(d.verifyError, null, `delivery ${d.headers['webhook-id']} verifies`)
      assert.ok(eventIds.includes(d.headers['webhook-id']!), 'only this account\'s events')
      const event = await call(second.url, key, 'GET', `/events/${d.headers['webhook-id']}`)
      assert.equal(event.status, 200, event.raw)
      assert.deepEqual(JSON.parse(d.body), event.body.data, 'the body is the event')
      assert.deepEqual(verifyDelivery(secret, d.body, d.headers), event.body.data)
    }
    assert.deepEqual([...new Set(r.ids())].sort(), eventIds)

    // Each delivery is recorded as done and leaves the queue.
    await waitFor(async () => {
      const left = await db.kysely.selectFrom('jobs').select('id').where('type', '=', DELIVER_JOB).execute()
      return left.length === 0 ? true : undefined
    }, 10_000, 'the delivery jobs to finish', 100)
    const log = await call(second.url, key, 'GET', `/webhook_endpoints/${endpointId}/deliveries?limit=100`)
    const succeeded = (log.body.data as Array<{ event_id: string, succeeded: boolean, status_code: number | null }>).filter((a) => a.succeeded)
    assert.deepEqual(succeeded.map((a) => a.event_id).sort(), eventIds, 'one successful attempt per event')
    assert.ok(succeeded.every((a) => a.status_code === 200))

    assert.deepEqual(await stopServer(second), { code: 0, killed: false })
  } finally {
    for (const server of servers) await killServer(server)
    await receiver?.close()
    await store.close()
  }
}

describe('pending webhook deliveries survive a SIGKILL and restart', () => {
  test('on SQLite', async (t) => {
    await deliveriesSurviveKill(await openStore('sqlite'), (m) => t.diagnostic(m))
  })

  const pgUrl = process.env.TEST_DATABASE_URL
  test('on PostgreSQL', { skip: !pgUrl && 'TEST_DATABASE_URL not set' }, async (t) => {
    await deliveriesSurviveKill(await openStore('postgres'), (m) => t.diagnostic(m))
  })
})
