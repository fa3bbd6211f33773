import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseBuilds } from '../../bench/build-args.js'

/**
 * The builds that bench/compare-builds.ts and bench/instructions.ts compare: a directory, then its own
 * environment variables, where NODE_FLAGS gives node's flags instead (NODE_OPTIONS takes few of V8's).
 */

test('a build takes environment variables after commas, and NODE_FLAGS as node flags, not as a variable', () => {
  assert.deepEqual(parseBuilds(['dist', 'dist-before,WRITE_BATCH=8,NODE_FLAGS=--no-maglev --max-semi-space-size=4']), [
    { name: 'dist', dir: 'dist', env: {}, nodeFlags: [] },
    {
      name: 'dist-before,WRITE_BATCH=8,NODE_FLAGS=--no-maglev --max-semi-space-size=4',
      dir: 'dist-before',
      env: { WRITE_BATCH: '8' },
      nodeFlags: ['--no-maglev', '--max-semi-space-size=4'],
    },
  ])
})

test('a setting without a name and an equals sign is refused', () => {
  assert.throws(() => parseBuilds(['dist,--no-maglev']), /give an environment variable as NAME=VALUE, not --no-maglev/)
})
