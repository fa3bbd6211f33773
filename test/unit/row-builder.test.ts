import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { compileRowBuilder, compileRowCopier } from '../../src/db/row-builder.js'

/** src/db/row-builder.ts: rows made from values, and rows copied, as plain objects with their columns in order. */
describe('row builders', () => {
  test('a row is made from its values in column order, a repeated name in its first place with its last value', () => {
    const build = compileRowBuilder(['id', 'n', 'weird "name"', '1', 'n'])
    const row = build(['a', 1, 'w', 'one', 2])
    assert.deepStrictEqual(Object.keys(row), ['1', 'id', 'n', 'weird "name"']) // integer-like keys first, as in any object
    assert.deepStrictEqual(row, { id: 'a', n: 2, 'weird "name"': 'w', 1: 'one' })
    assert.equal(Object.getPrototypeOf(row), Object.prototype)
  })

  test('a column named __proto__ is an own property, never the prototype', () => {
    const row = compileRowBuilder(['__proto__', 'n'])([{ polluted: true }, 1])
    assert.equal(Object.getPrototypeOf(row), Object.prototype)
    assert.deepStrictEqual(Object.getOwnPropertyDescriptor(row, '__proto__')?.value, { polluted: true })
    const copy = compileRowCopier(['__proto__'])(row)
    assert.equal(Object.getPrototypeOf(copy), Object.prototype)
    assert.deepStrictEqual(Object.keys(copy), ['__proto__'])
  })

  test('a copy holds the named columns only, in the order named, and is a new object', () => {
    const row = { i: 3, id: 'a', n: null, j: { k: [1] } }
    const copy = compileRowCopier(['id', 'n', 'j'])(row)
    assert.deepStrictEqual(Object.keys(copy), ['id', 'n', 'j'])
    assert.deepStrictEqual(copy, { id: 'a', n: null, j: { k: [1] } })
    assert.notEqual(copy, row)
  })

  test('names are never code', () => {
    const build = compileRowBuilder(['a"]; throw new Error("x"); //', '}'])
    assert.deepStrictEqual(build([1, 2]), { 'a"]; throw new Error("x"); //': 1, '}': 2 })
    assert.deepStrictEqual(compileRowCopier(['}'])({ '}': 2 }), { '}': 2 })
  })
})
