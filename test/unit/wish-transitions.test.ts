import assert from 'node:assert/strict'
import { test } from 'node:test'
import { canTransition, effectiveStatus, isTerminal, WISH_STATUSES } from '../../src/modules/wishes/transitions.js'

test('the transition table of contract section 4', () => {
  const allowed = new Set([
    'active>pending', 'active>fulfilled', 'active>cancelled', 'active>expired',
    'pending>active', 'pending>fulfilled', 'pending>cancelled', 'pending>expired',
  ])
  for (const from of WISH_STATUSES) {
    for (const to of WISH_STATUSES) {
      const expected = from === to || allowed.has(`${from}>${to}`)
      assert.equal(canTransition(from, to), expected, `${from} -> ${to}`)
    }
  }
  assert.deepEqual(WISH_STATUSES.filter(isTerminal), ['fulfilled', 'cancelled', 'expired'])
})

test('an open wish past expires_at reads expired; a final one keeps its status', () => {
  const now = '2026-11-22T10:00:00.000Z'
  assert.equal(effectiveStatus('active', '2026-11-22T09:59:59.999Z', now), 'expired')
  assert.equal(effectiveStatus('pending', now, now), 'expired')
  assert.equal(effectiveStatus('active', '2026-11-22T10:00:00.001Z', now), 'active')
  assert.equal(effectiveStatus('active', null, now), 'active')
  assert.equal(effectiveStatus('fulfilled', '2026-11-22T09:00:00.000Z', now), 'fulfilled')
})
