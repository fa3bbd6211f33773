import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { ROOT } from '../../bin/build-state.js'
import { SERVER_NODE_FLAGS } from '../../bin/node-flags.js'

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8')

test('every place that starts the server passes the same V8 flags (bin/node-flags.js)', () => {
  const flags = SERVER_NODE_FLAGS.join(' ')
  assert.equal(read('bin/wishpay.js').split('\n')[0], `#!/usr/bin/env -S node ${flags}`)
  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> }
  assert.equal(pkg.scripts.start, `node ${flags} bin/wishpay.js serve`)
  const entrypoint = JSON.stringify(['node', ...SERVER_NODE_FLAGS, 'dist/cli.js'])
  assert.ok(read('Dockerfile').includes(`ENTRYPOINT ${entrypoint.replaceAll(',', ', ')}`), `Dockerfile: ENTRYPOINT ${entrypoint}`)
})
