import assert from 'node:assert/strict'
import { test } from 'node:test'
import { toTimestamp } from '../../src/lib/clock.js'

/**
 * toTimestamp (lib/clock.ts) formats from its minute's text; every date must come out as toISOString
 * writes it, whichever minutes it has kept.
 */

const MAX = 8.64e15
const DAY = 86_400_000

test('the same text as toISOString: minute, second and millisecond edges, far years, before 1970', () => {
  const times = [
    0, 1, 59_999, 60_000, 60_001, -1, -59_999, -60_000, -60_001, 999, 1000, 1001,
    Date.UTC(1999, 11, 31, 23, 59, 59, 999), Date.UTC(2000, 0, 1), Date.UTC(2024, 1, 29, 12, 0, 0, 7),
    Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), Date.UTC(-1, 0, 1, 0, 0, 0, 1),
    // The year 0 (Date.UTC takes 0-99 as 1900-1999) and the last millisecond before it, in six digits.
    Date.parse('0000-01-01T00:00:00.000Z'), Date.parse('0000-01-01T00:00:00.000Z') - 1,
    MAX, -MAX, MAX - 1, -MAX + 1,
  ]
  for (const ms of times) assert.equal(toTimestamp(new Date(ms)), new Date(ms).toISOString(), String(ms))
})

test('the same text as toISOString for random dates, now and a day ahead taking turns, and repeats', () => {
  const now = Date.now()
  for (let i = 0; i < 20_000; i++) {
    const ms = i % 3 === 0
      ? Math.floor((Math.random() * 2 - 1) * MAX)
      : now + Math.floor(Math.random() * 600_000) + (i % 3 === 1 ? DAY : 0)
    const date = new Date(ms)
    assert.equal(toTimestamp(date), date.toISOString(), String(ms))
    assert.equal(toTimestamp(date), date.toISOString(), `${ms}, again`)
  }
})

test('an invalid date throws as toISOString does', () => {
  toTimestamp(new Date(0))
  assert.throws(() => toTimestamp(new Date(Number.NaN)), RangeError)
  assert.throws(() => toTimestamp(new Date(MAX + 1)), RangeError)
})
