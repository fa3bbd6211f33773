import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import { quoteLiteral } from '../../src/db/pg-script.js'

/**
 * The statement batch's literals (src/db/pg-script.ts) are node-pg's escapeLiteral, computed faster:
 * the two must give the same text for every string, here every string of up to four characters over an
 * alphabet of the characters that matter, and a few long ones.
 */

const ALPHABET = ["'", '\\', 'a', 'é', '\n', '😀', '$']

function* strings(length: number): Generator<string> {
  if (length === 0) { yield ''; return }
  for (const head of strings(length - 1)) for (const c of ALPHABET) yield head + c
}

test('quoteLiteral gives what pg.escapeLiteral gives', () => {
  let checked = 0
  for (let length = 0; length <= 4; length++) {
    for (const text of strings(length)) {
      assert.equal(quoteLiteral(text), pg.escapeLiteral(text), JSON.stringify(text))
      checked++
    }
  }
  const json = JSON.stringify([{ body: "it's a \\ back\\\\slash", nested: JSON.stringify({ q: "'\\'" }) }])
  for (const text of [json, json.repeat(50), "'); drop table payments; --", "\\'); drop table payments; --"]) {
    assert.equal(quoteLiteral(text), pg.escapeLiteral(text))
  }
  assert.equal(checked, 2801)
})
