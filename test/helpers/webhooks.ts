import assert from 'node:assert/strict'
import type { TestAccount } from './app.js'
import { getList } from './fixtures.js'
import { type Receiver, type Responder, startReceiver } from './receiver.js'

/** Webhook endpoints, their deliveries and receivers, shared by the webhooks suites (test/api/webhooks-*.test.ts). */

/** Starts a receiver and adds it to `receivers`, which the suite closes after each test. */
export async function receiverIn(receivers: Receiver[], options: { port?: number, respond?: Responder } = {}): Promise<Receiver> {
  const r = await startReceiver(options)
  receivers.push(r)
  return r
}

/** POST /webhook_endpoints as `a`: it must answer 201; returns the endpoint, with its secret. */
export async function createEndpoint(a: TestAccount, body: Record<string, unknown>): Promise<any> {
  const res = await a.request('POST', '/webhook_endpoints', body)
  assert.equal(res.status, 201, res.raw)
  return res.body.data
}

/** An endpoint of `a` for `events` that delivers to `r`, whose secret the receiver then knows. */
export async function endpointFor(a: TestAccount, r: Receiver, events: string[] = ['*']): Promise<any> {
  const ep = await createEndpoint(a, { url: r.url, events })
  r.secret = ep.secret
  return ep
}

/** GET an endpoint's delivery attempts as `a` (getList's checks); returns the body. */
export function listAttempts(a: TestAccount, endpointId: string, qs = ''): Promise<any> {
  return getList(a, `/webhook_endpoints/${endpointId}/deliveries${qs}`)
}

/** The account's events, up to 100, newest first. */
export async function accountEvents(a: TestAccount): Promise<any[]> {
  return (await getList(a, '/events?limit=100')).data
}
