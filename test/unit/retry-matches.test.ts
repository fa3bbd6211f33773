import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fingerprintOf, requestTextOf } from '../../src/http/fingerprint.js'
import { createRetryMatches } from '../../src/http/retry-matches.js'
import { randomBase62 } from '../../src/lib/ids.js'
import { heapUsed } from '../helpers/heap.js'

/**
 * The memo of retried bytes (src/http/retry-matches.ts) answers only what the fingerprint would, and is
 * bounded in bytes of heap. Through HTTP, test/api/idempotency-replay.test.ts and its neighbours hold
 * that no request other than a retry of the same bytes is ever spared the full check.
 */

/** A payment request as the idempotency check sees it, its body parsed from its own text. */
function paymentRequest(i: number, agentId?: string, url = '/payments') {
  const bodyText = `{"mandate_id":"mdt_${randomBase62(26)}","amount":${i},"idempotency_key":"${randomBase62(20)}"}`
  return { body: JSON.parse(bodyText) as unknown, bodyText, url, method: 'POST', ctx: agentId === undefined ? {} : { agentId } } as never
}

test('the same bytes are the same request, other bytes are checked in full, and a wrong fingerprint never matches', () => {
  const sameRequest = createRetryMatches()
  const request = paymentRequest(100)
  const fingerprint = fingerprintOf(request)
  assert.equal(sameRequest(request, 'acct\nk', 'f'.repeat(64)), false)
  assert.equal(sameRequest(request, 'acct\nk', fingerprint), true)
  // A request whose parsed body is not its text's (no parser makes one) shows which answer came from the
  // memo: its own fingerprint differs, its text is the one remembered.
  const sameTextOtherBody = { ...(request as object), body: { mandate_id: 'mdt_other', amount: 1 } } as never
  assert.equal(createRetryMatches()(sameTextOtherBody, 'acct\nk', fingerprint), false, 'a new memo takes the fingerprint')
  assert.equal(sameRequest(sameTextOtherBody, 'acct\nk', fingerprint), true, 'this one answers from what it remembers')
  assert.equal(sameRequest(sameTextOtherBody, 'acct\nother', fingerprint), false, 'for its own key only')
  assert.equal(sameRequest(request, 'acct\nk', 'f'.repeat(64)), false, 'the memo is bound to the fingerprint it matched')
  const other = paymentRequest(101)
  assert.equal(sameRequest(other, 'acct\nk', fingerprint), false)
  assert.notEqual(requestTextOf(paymentRequest(1, 'agt_1')), requestTextOf(paymentRequest(1)), 'the agent is part of the text')
})

test('a text beyond Latin-1, lone surrogates included, is remembered exactly as it came', () => {
  const sameRequest = createRetryMatches()
  const bodyText = '{"mandate_id":"mdt_caf\u00e9 \u{1F600} \ud800","amount":1}'
  const request = { body: JSON.parse(bodyText) as unknown, bodyText, url: '/payments', method: 'POST', ctx: {} } as never
  const fingerprint = fingerprintOf(request)
  assert.equal(sameRequest(request, 'acct\nk', fingerprint), true)
  // As in the first test, a body that is not its text's shows which answers come from the memo.
  const withText = (text: string) => ({ ...(request as object), bodyText: text, body: { amount: 2 } }) as never
  assert.equal(sameRequest(withText(bodyText), 'acct\nk', fingerprint), true, 'the remembered copy equals the text')
  assert.equal(sameRequest(withText(bodyText.replace('\ud800', '\ufffd')), 'acct\nk', fingerprint), false, 'a replacement character is another text')
  assert.equal(sameRequest(withText(bodyText.replace('\ud800', '\udc00')), 'acct\nk', fingerprint), false)
})

test('its entries hold no more heap than their estimate, whatever the strings they were made from share', () => {
  const sameRequest = createRetryMatches(1e12)
  // Each request is made and handed over in turn, so that the memo alone holds what it keeps (the text,
  // the slot, the fingerprint), as in the server once the request has ended. The strings are as V8 may
  // hold them there: the path a slice of a URL whose query string is 10,000 characters (a slice keeps
  // the whole URL alive), the texts joined a character at a time (randomBase62: a tree of pieces).
  let estimated = 0
  let last: { request: ReturnType<typeof paymentRequest>, slot: string, fingerprint: string } | undefined
  const before = heapUsed()
  for (let i = 0; i < 5_000; i++) {
    const request = paymentRequest(i, undefined, `/mandates/mdt_${randomBase62(26)}/revoke?${'q'.repeat(10_000)}${i}`)
    last = { request, slot: `acct_${randomBase62(26)}\n${randomBase62(36)}-${i}`, fingerprint: fingerprintOf(request) }
    assert.equal(sameRequest(last.request, last.slot, last.fingerprint), true)
    estimated += 512 + 2 * (requestTextOf(request).length + last.slot.length)
  }
  const held = heapUsed() - before
  // The memo is used after the measurement, so V8 cannot have collected it before (it did, on Node 20,
  // when nothing used it after: the test then measured nothing). The lower bound catches a measurement
  // that anything else pulled down: a real one is about half the estimate.
  assert.equal(sameRequest(last!.request, last!.slot, last!.fingerprint), true)
  assert.ok(held <= estimated, `5,000 entries hold ${held} bytes, more than the ${estimated} estimated`)
  assert.ok(held >= estimated / 4, `5,000 entries hold ${held} bytes, too few for a measurement of them (estimate ${estimated})`)
})

test('past its bound the oldest entries go: 5,000 matches in a memo of 200 KB hold a fraction of what they would unbounded', () => {
  // As above, the memo alone holds what it keeps; the unbounded memo held about 4.5 MB for such entries.
  const before = heapUsed()
  const sameRequest = createRetryMatches(200_000)
  let last: { request: ReturnType<typeof paymentRequest>, slot: string, fingerprint: string } | undefined
  for (let i = 0; i < 5_000; i++) {
    const request = paymentRequest(i)
    last = { request, slot: `acct_${randomBase62(26)}\n${randomBase62(36)}-${i}`, fingerprint: fingerprintOf(request) }
    assert.equal(sameRequest(last.request, last.slot, last.fingerprint), true)
  }
  const held = heapUsed() - before
  // The bound, the cache's own arrays and whatever code V8 compiled meanwhile: well under the unbounded 4.5 MB.
  assert.ok(held <= 1_000_000, `the memo holds ${held} bytes`)
  // The newest is still answered from it, and still only for its own fingerprint.
  assert.equal(sameRequest(last!.request, last!.slot, last!.fingerprint), true)
  assert.equal(sameRequest(last!.request, last!.slot, 'f'.repeat(64)), false)
})
