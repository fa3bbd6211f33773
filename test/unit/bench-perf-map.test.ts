import assert from 'node:assert/strict'
import { test } from 'node:test'
import { perfMapLookup } from '../../bench/perf-map.js'

/**
 * bench/instructions.ts names JIT-compiled code from node's perf map (bench/perf-map.ts). V8 reuses the
 * addresses of code it freed, so where lines overlap, the line written last names the address.
 */

const line = (start: number, size: number, name: string) => `${start.toString(16)} ${size.toString(16)} ${name}`

test('an address is named by the line that covers it', () => {
  const name = perfMapLookup([line(0x1000, 0x100, 'JS:*a x.js:1:1'), line(0x2000, 0x80, 'JS:^b y.js:2:2'), ''].join('\n'))
  assert.equal(name(0x1000), 'JS:*a x.js:1:1')
  assert.equal(name(0x10ff), 'JS:*a x.js:1:1')
  assert.equal(name(0x207f), 'JS:^b y.js:2:2')
  assert.equal(name(0x1100), undefined, 'the end is not covered')
  assert.equal(name(0xfff), undefined)
  assert.equal(name(0x3000), undefined)
})

test('where freed code\'s range was reused, the newer line names the address', () => {
  const name = perfMapLookup([
    // Startup code, long, later freed; then two small functions placed inside its range.
    line(0x1000, 0x1000, 'JS:*parseSource lexer:85:22'),
    line(0x1800, 0x40, 'JS:*insertRows query-template.js:140:27'),
    line(0x1400, 0x40, 'JS:*newId ids.js:41:22'),
    // An older line after the newer ones in address order is still older.
    line(0x5000, 0x20, 'JS:~old z.js:1:1'),
    line(0x4ff0, 0x40, 'JS:*new z.js:2:2'),
  ].join('\n'))
  assert.equal(name(0x1820), 'JS:*insertRows query-template.js:140:27')
  assert.equal(name(0x1410), 'JS:*newId ids.js:41:22')
  assert.equal(name(0x1900), 'JS:*parseSource lexer:85:22', 'an address no newer line covers keeps the old name')
  assert.equal(name(0x5010), 'JS:*new z.js:2:2')
})

test('names with spaces are kept whole, and an empty map names nothing', () => {
  assert.equal(perfMapLookup(line(0x10, 0x10, 'JS:* file:///a b.js:3:4'))(0x18), 'JS:* file:///a b.js:3:4')
  assert.equal(perfMapLookup('')(0x10), undefined)
})
