import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { isPublicAddress } from '../../src/modules/webhooks/address-policy.js'
import { send } from '../../src/modules/webhooks/sender.js'
import { type Response, startTestApp, type TestApp } from '../helpers/app.js'
import { assertInvalid } from '../helpers/assertions.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Webhook hosts with WEBHOOK_ALLOW_PRIVATE off (contract section 7): IPv6 forms that carry an IPv4
 * address are judged so that none of them reaches a private, loopback or link-local IPv4 target, and a
 * host that is private and one that does not resolve get the same answer, so that the API cannot be
 * used to learn which internal names exist.
 */

/** IPv6 hosts that embed, or are routed as, a non-public IPv4 address. */
const EMBEDDED_PRIVATE_V4 = [
  // IPv4-compatible (::a.b.c.d, deprecated): the URL parser writes them in hex.
  'http://[::127.0.0.1]/hooks',
  'http://[::7f00:1]/hooks',
  'http://[::a9fe:a9fe]/hooks', // 169.254.169.254, the cloud metadata service
  'http://[::10.0.0.1]/hooks',
  'http://[::192.168.1.1]/hooks',
  // IPv4-mapped.
  'http://[::ffff:7f00:1]/hooks',
  'http://[::ffff:169.254.169.254]/hooks',
  // NAT64, well-known prefix (RFC 6052) and local-use prefix (RFC 8215).
  'http://[64:ff9b::127.0.0.1]/hooks',
  'http://[64:ff9b::a9fe:a9fe]/hooks',
  'http://[64:ff9b::10.1.2.3]/hooks',
  'http://[64:ff9b:1::a00:1]/hooks',
  // 6to4: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
  'http://[2002:7f00:1::1]/hooks',
  'http://[2002:a9fe:a9fe::1]/hooks',
  'http://[2002:c0a8:101::1]/hooks',
  // Teredo: the client's IPv4 is the last 32 bits, inverted (here 127.0.0.1 and 10.0.0.1).
  'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hooks',
  'http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/hooks',
  // IPv4-translated (RFC 6145) and other non-global IPv6 space.
  'http://[::ffff:0:7f00:1]/hooks',
  'http://[100::1]/hooks',
  'http://[fec0::1]/hooks',
  'http://[5f00::1]/hooks',
]

/** Public targets that stay allowed, IPv6 and IPv4 literals that need no DNS. */
const PUBLIC = [
  'https://8.8.8.8/hooks',
  'https://[2001:4860:4860::8888]/hooks',
  'https://[2606:4700:4700::1111]/hooks',
  'https://[::ffff:8.8.8.8]/hooks',
  // What a DNS64 resolver answers for a public IPv4-only receiver on an IPv6-only host.
  'https://[64:ff9b::8.8.8.8]/hooks',
]

/** A private name and a name that cannot resolve (RFC 6761 reserves .invalid). */
const LOCAL_NAME = 'localhost'
const UNRESOLVABLE_NAME = 'no-such-host.invalid'

/** The error of a refused URL without the parts that differ per request. */
function refusal(res: Response): unknown {
  assertInvalid(res, 'url')
  const { request_id: _id, ...rest } = res.body.error
  return rest
}

describe('webhook address policy', () => {
  test('every embedding of a non-public IPv4 address is refused; public addresses are not', () => {
    for (const url of EMBEDDED_PRIVATE_V4) {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
      assert.equal(isPublicAddress(host), false, `${url} (${host})`)
    }
    for (const url of PUBLIC) {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
      assert.equal(isPublicAddress(host), true, `${url} (${host})`)
    }
  })
})

for (const kind of storeKinds()) {
  describe(`webhook hosts with WEBHOOK_ALLOW_PRIVATE off (${kind.name})`, () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp(kind)
      assert.equal(t.config.webhookAllowPrivate, false)
    })
    after(async () => { await t?.close() })

    test('IPv6 hosts embedding a private IPv4 address are refused on POST and PUT; nothing is saved', async () => {
      const a = await t.account()
      const ep = await a.request('POST', '/webhook_endpoints', { url: 'https://8.8.8.8/hooks', events: ['*'] })
      assert.equal(ep.status, 201, ep.raw)
      for (const url of EMBEDDED_PRIVATE_V4) {
        const created = await a.request('POST', '/webhook_endpoints', { url, events: ['*'] })
        assert.doesNotThrow(() => assertInvalid(created, 'url'), `POST ${url}: ${created.raw}`)
        const updated = await a.request('PUT', `/webhook_endpoints/${ep.body.data.id}`, { url })
        assert.doesNotThrow(() => assertInvalid(updated, 'url'), `PUT ${url}: ${updated.raw}`)
      }
      const list = await a.request('GET', '/webhook_endpoints')
      assert.equal(list.body.meta.total, 1, 'nothing was saved')
      assert.equal(list.body.data[0].url, 'https://8.8.8.8/hooks', 'no PUT went through')
    })

    test('public IPv4 and IPv6 literals, NAT64 of a public IPv4 included, are accepted', async () => {
      const a = await t.account()
      for (const url of PUBLIC) {
        const res = await a.request('POST', '/webhook_endpoints', { url, events: ['*'] })
        assert.equal(res.status, 201, `${url}: ${res.raw}`)
      }
    })

    test('a private host and an unresolvable host get the same answer', async () => {
      const a = await t.account()
      const answers = await Promise.all([LOCAL_NAME, UNRESOLVABLE_NAME, '127.0.0.1', '[::7f00:1]'].map((host) =>
        a.request('POST', '/webhook_endpoints', { url: `https://${host}/hooks`, events: ['*'] })))
      const [local, unresolvable, ...literals] = answers.map(refusal)
      assert.deepEqual(unresolvable, local, 'the same status, code, param and message')
      for (const literal of literals) assert.deepEqual(literal, local, 'IP literals are answered alike')
      const message = (local as { message: string }).message
      assert.ok(!message.includes(LOCAL_NAME) && !message.includes(UNRESOLVABLE_NAME), `the message names no host: ${message}`)
      assert.doesNotMatch(message, /resolv(ed|able)\b|not found|ENOTFOUND/i, 'nor says whether it resolved')
    })

    test('a delivery to a private name and to an unresolvable one fail with the same error text', async () => {
      const attempt = (host: string) => send({
        url: `http://${host}:9/hooks`, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', eventId: 'evt_test',
        body: '{}', now: new Date(), allowPrivate: false,
      })
      const [local, unresolvable] = await Promise.all([attempt(LOCAL_NAME), attempt(UNRESOLVABLE_NAME)])
      assert.equal(local.statusCode, null)
      assert.equal(unresolvable.statusCode, null)
      assert.ok(local.error && unresolvable.error, `both fail: ${local.error} / ${unresolvable.error}`)
      assert.equal(unresolvable.error.replace(UNRESOLVABLE_NAME, 'HOST'), local.error.replace(LOCAL_NAME, 'HOST'))
    })
  })
}
