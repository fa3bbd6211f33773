import assert from 'node:assert/strict'
import { hash } from 'node:crypto'
import { test } from 'node:test'
import { canonicalJson, fingerprintOf } from '../../src/http/fingerprint.js'

/**
 * A request's fingerprint is saved with its idempotency record and compared when the key comes back, so
 * its text must not change between releases: a retry after an upgrade would get 422 instead of its
 * replay. The canonical JSON (src/http/fingerprint.ts) is held here to the form it had before it was
 * rewritten as loops (docs/performance.md, thirty-first pass), copied below as it was.
 */
function earlierCanonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(earlierCanonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${earlierCanonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

function earlierFingerprint(request: { body: unknown, url: string, method: string, ctx: { agentId?: string } }): string {
  const { idempotency_key: _ignored, ...body } = (request.body ?? {}) as Record<string, unknown>
  const path = request.url.split('?')[0]
  const agent = request.ctx.agentId === undefined ? '' : `agent ${request.ctx.agentId}\n`
  return hash('sha256', `${agent}${request.method} ${path}\n${earlierCanonicalJson(body)}`, 'hex')
}

const bodies: unknown[] = [
  {},
  { mandate_id: 'mdt_1', amount: 1, idempotency_key: 'k1' },
  { amount: 1, mandate_id: 'mdt_1', currency: 'USD', metadata: {}, idempotency_key: 'k1' },
  { b: 1, a: 2, B: 3, _: 4, 'a-b': 5, a1: 6, 10: 7, 9: 8, é: 9, '😀': 10, '\uffff': 11, '': 12 },
  { nested: { z: [3, 2, 1], a: { y: null, x: true, w: false } }, list: [{ b: 1, a: 2 }, [], [[]], {}] },
  { text: 'quote " backslash \\ newline \n tab \t control \u0001 unicode é 😀 lone \ud800 end' },
  { numbers: [0, -0, 1.5, 1e21, 1e-7, 123456789012345, -3] },
  { gone: undefined, kept: null, inArray: [1, undefined, 3], idempotency_key: undefined },
  { idempotency_key: 'only the key' },
  { nested: { idempotency_key: 'kept below the top' } },
  [{ b: 1, a: 2 }, 'x'],
  'a string body',
  42,
  null,
  undefined,
]

test('the canonical JSON is the text the earlier form made, for every kind of body', () => {
  for (const body of bodies) {
    assert.equal(canonicalJson(body), earlierCanonicalJson(body), JSON.stringify(body) ?? String(body))
  }
  // Member order never matters.
  assert.equal(canonicalJson({ b: 1, a: { d: 1, c: 2 } }), canonicalJson({ a: { c: 2, d: 1 }, b: 1 }))
  assert.equal(canonicalJson({ b: 1, a: 2 }), '{"a":2,"b":1}')
})

test('a request\'s fingerprint is the one the earlier form gave: method, path without its query, body without its key, the agent', () => {
  for (const body of bodies) {
    for (const request of [
      { body, url: '/payments', method: 'POST', ctx: {} },
      { body, url: '/payments/pay_1/refunds?expand=x&y=1', method: 'POST', ctx: { agentId: 'agt_1' } },
      { body, url: '/acp/checkout_sessions?', method: 'PUT', ctx: {} },
    ]) {
      const label = `${request.url} ${JSON.stringify(body) ?? String(body)}`
      assert.equal(fingerprintOf(request as never), earlierFingerprint(request), label)
    }
  }
  // The key itself never changes the fingerprint; the rest of the body does.
  const at = (body: unknown) => fingerprintOf({ body, url: '/payments', method: 'POST', ctx: {} } as never)
  assert.equal(at({ amount: 1, idempotency_key: 'a' }), at({ amount: 1, idempotency_key: 'b' }))
  assert.notEqual(at({ amount: 1 }), at({ amount: 2 }))
})
