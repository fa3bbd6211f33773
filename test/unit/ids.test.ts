import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decodeTime, encodeTime, isValid } from 'ulid'
import { idTimePart, newId, randomBase62 } from '../../src/lib/ids.js'

// First in this file: the tests after it move the ids' last time into the future.
test('an id made at a date a ULID cannot hold is made now', () => {
  for (const at of [new Date(Number.NaN), new Date(-1), new Date(2 ** 48)]) {
    const before = Date.now()
    const id = newId('wish', at).slice('wish_'.length).toUpperCase()
    assert.ok(isValid(id))
    const time = decodeTime(id)
    assert.ok(time >= before && time <= Date.now(), `${at.getTime()}: ${time}`)
  }
  for (const ms of [-1, 1.5, 2 ** 48, Number.NaN]) assert.throws(() => idTimePart(ms), RangeError)
})

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

test('ids are ULIDs in lowercase Crockford base32, their time the millisecond they were made at', () => {
  const at = new Date('2031-05-06T07:08:09.123Z')
  const later = new Date(at.getTime() + 60_000)
  const id = newId('pay', later)
  const ulidPart = id.slice('pay_'.length).toUpperCase()
  assert.ok(isValid(ulidPart))
  assert.equal(decodeTime(ulidPart), later.getTime())
  assert.equal(idTimePart(later.getTime()), id.slice(4, 14))
  assert.equal(idTimePart(later.getTime()), encodeTime(later.getTime(), 10).toLowerCase())
  assert.equal(idTimePart(0), '0000000000')
  assert.equal(idTimePart(2 ** 48 - 1), '7zzzzzzzzz')
})

test('ids of one millisecond count up by one in their random part', () => {
  const at = new Date(Date.UTC(2032, 0, 1))
  const ids = Array.from({ length: 100 }, () => newId('evt', at))
  for (let i = 1; i < ids.length; i++) {
    const [previous, current] = [ids[i - 1]!.slice(4).toUpperCase(), ids[i]!.slice(4).toUpperCase()]
    assert.equal(decodeTime(current), at.getTime())
    // As the ulid package's monotonic factory does: the last id's random part plus one.
    assert.equal(current.slice(10), incrementedBase32(previous.slice(10)))
  }
})

test('random digits are spread over the whole alphabet', () => {
  const digits = Array.from({ length: 2000 }, (_, i) => newId('req', new Date(Date.UTC(2033, 0, 1) + i)).slice(14)).join('')
  assert.equal(new Set(digits).size, 32)
})

/** Base32 text plus one, digit by digit (Crockford's alphabet). */
function incrementedBase32(text: string): string {
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
  const digits = [...text].map((c) => alphabet.indexOf(c))
  let i = digits.length - 1
  while (digits[i] === 31) digits[i--] = 0
  digits[i]!++
  return digits.map((d) => alphabet[d]).join('')
}
