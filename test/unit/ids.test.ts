import assert from 'node:assert/strict'
import { test } from 'node:test'
import { newId, randomBase62 } from '../../src/lib/ids.js'

test('ids are prefixed, unique and sort in creation order', () => {
  const ids = Array.from({ length: 1000 }, () => newId('wish'))
  assert.equal(new Set(ids).size, ids.length)
  assert.deepEqual([...ids].sort(), ids)
  for (const id of ids) assert.match(id, /^wish_[0-9a-z]{26}$/)
  // Ids never go backwards, even when the clock does (monotonic ULIDs).
  const later = newId('pay', new Date('2030-01-01'))
  assert.ok(newId('pay', new Date('2029-01-01')) > later)
})

test('random base62 text has the requested length and alphabet', () => {
  const text = randomBase62(10_000)
  assert.match(text, /^[0-9A-Za-z]{10000}$/)
  // Every symbol shows up in 10,000 draws from 62 (failure odds are astronomically small).
  assert.equal(new Set(text).size, 62)
})
