import assert from 'node:assert/strict'
import { test } from 'node:test'
import { errors } from '../../src/lib/errors.js'

/** A 404 for an id of another kind says so (issue 16, item 5): the most common mistake with prefixed ids. */
test('resource_missing names the kind of a wrongly prefixed id and the prefix the route takes', () => {
  assert.equal(errors.resourceMissing('mandate', 'wish_01abc').message, "No such mandate: 'wish_01abc'. `wish_…` is a wish id; this route takes a mandate id (`mdt_…`)")
  assert.equal(errors.resourceMissing('payment', 'mdt_01abc').message, "No such payment: 'mdt_01abc'. `mdt_…` is a mandate id; this route takes a payment id (`pay_…`)")
  assert.equal(errors.resourceMissing('agent', 'evt_1').message, "No such agent: 'evt_1'. `evt_…` is an event id; this route takes an agent id (`agt_…`)")
  // The right prefix, or no known prefix: the plain message.
  assert.equal(errors.resourceMissing('mandate', 'mdt_missing').message, "No such mandate: 'mdt_missing'")
  assert.equal(errors.resourceMissing('mandate', 'anything').message, "No such mandate: 'anything'")
  // "we_" is a webhook endpoint's prefix; "wish_" is not taken for it.
  assert.equal(errors.resourceMissing('webhook endpoint', 'wish_1').message, "No such webhook endpoint: 'wish_1'. `wish_…` is a wish id; this route takes a webhook endpoint id (`we_…`)")
})
