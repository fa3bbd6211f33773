import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { isBuildCurrent, stampBuild } from '../../bin/build-state.js'

/** A checkout with src/ and dist/, whose files' times the test sets. */
function checkout(): { root: string, touch(file: string, secondsAgo: number): void } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-build-'))
  fs.mkdirSync(path.join(root, 'src/modules'), { recursive: true })
  fs.mkdirSync(path.join(root, 'dist'))
  fs.writeFileSync(path.join(root, 'src/cli.ts'), '')
  fs.writeFileSync(path.join(root, 'src/modules/a.ts'), '')
  const touch = (file: string, secondsAgo: number) => {
    const at = new Date(Date.now() - secondsAgo * 1000)
    fs.utimesSync(path.join(root, file), at, at)
  }
  touch('src/cli.ts', 60)
  touch('src/modules/a.ts', 60)
  return { root, touch }
}

test('bin/wishpay.js runs dist/ only when a finished build is newer than every source file', () => {
  const { root, touch } = checkout()
  assert.equal(isBuildCurrent(root), false, 'no stamp: the build never finished')
  stampBuild(root)
  touch('dist/.build-stamp', 30)
  assert.equal(isBuildCurrent(root), true)
  touch('src/modules/a.ts', 10)
  assert.equal(isBuildCurrent(root), false, 'a source file changed after the build (in a nested folder)')
  stampBuild(root)
  assert.equal(isBuildCurrent(root), true)
  fs.rmSync(path.join(root, 'src'), { recursive: true })
  assert.equal(isBuildCurrent(root), true, 'an install without sources runs what it has')
  fs.rmSync(root, { recursive: true })
})
