import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import type { CompiledQuery } from 'kysely'
import { executeScript, quoteLiteral } from '../../src/db/pg-script.js'

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

/**
 * The script's literals (executeScript) against PostgreSQL itself: every string of up to five characters
 * over the characters that can end or escape a literal reads back exactly, with standard_conforming_strings
 * on and off, whichever form executeScript chose for it.
 */
const DOLLAR_ALPHABET = ['$', 'w', "'", '\\', 'a', 'é']

function* dollarStrings(length: number): Generator<string> {
  if (length === 0) { yield ''; return }
  for (const head of dollarStrings(length - 1)) for (const c of DOLLAR_ALPHABET) yield head + c
}

const pgUrl = process.env.TEST_DATABASE_URL

/** A query of the batch with these values and no text of its own (the script runs it by name). */
const withValues = (...parameters: unknown[]) => ({ sql: '', parameters, query: { kind: 'RawNode' } }) as unknown as CompiledQuery

test('the script\'s literals read back exactly in PostgreSQL', { skip: !pgUrl && 'PostgreSQL only (TEST_DATABASE_URL not set)' }, async () => {
  const texts: string[] = []
  for (let length = 0; length <= 5; length++) texts.push(...dollarStrings(length))
  const json = JSON.stringify([{ response_body: JSON.stringify({ note: "it's $5 \\ off" }) }])
  texts.push(json, json.repeat(20), '$w', 'x$w', '$w$', "$w$'); drop table payments; --")
  // The fast path is taken for the JSON a payment sends; the texts that could end it early are quoted.
  const literal = (text: string) => executeScript(['echo'], [withValues(text)]).slice('execute echo('.length, -1)
  assert.ok(literal(json).startsWith('$w$'))
  assert.ok(!literal('x$w').startsWith('$w$') && !literal('a$w$b').startsWith('$w$'))
  const client = new pg.Client({ connectionString: pgUrl })
  await client.connect()
  try {
    await client.query('prepare echo(text) as select $1 as t')
    for (const setting of ['on', 'off']) {
      await client.query(`set standard_conforming_strings = ${setting}`)
      const results = await client.query(executeScript(texts.map(() => 'echo'), texts.map((text) => withValues(text)))) as unknown as Array<{ rows: Array<{ t: string }> }>
      assert.equal(results.length, texts.length)
      for (let i = 0; i < texts.length; i++) assert.equal(results[i]!.rows[0]!.t, texts[i], `${JSON.stringify(texts[i])} with standard_conforming_strings ${setting}`)
    }
  } finally {
    await client.end()
  }
})

/**
 * The statement batch's script: each query by its prepared name, its values as literals in order (a
 * string dollar-quoted unless the tag could end it early, a number or boolean quoted, null bare), the
 * queries one after another. The text is what PostgreSQL runs, so it is pinned here byte for byte.
 */
test('executeScript writes each query as EXECUTE with its values as literals', () => {
  const script = executeScript(['s1', 's2', 's3'], [
    withValues('pay_1', 250, true, null, undefined, 12n),
    withValues(),
    withValues("it's", 'a$w$b', '{"note":"\\"}'),
  ])
  assert.equal(script, [
    "execute s1($w$pay_1$w$, '250', 'true', null, null, '12')",
    'execute s2',
    "execute s3($w$it's$w$, 'a$w$b', $w$" + '{"note":"\\"}' + '$w$)',
  ].join(';\n'))
})
