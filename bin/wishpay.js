#!/usr/bin/env -S node --max-semi-space-size=8 --max-old-space-size=512 --no-maglev
// The `wishpay` command runs the compiled build (dist/) when it is current with src/, so a built checkout
// gets production speed and memory without knowing about dist/ (tsx's loader costs about 45 MB and a
// slower start). Otherwise it runs the TypeScript sources through tsx, a runtime dependency, so a fresh
// checkout works with no build step.
import { isBuildCurrent } from './build-state.js'

if (process.env.WISHPAY_RUN_SOURCES !== '1' && isBuildCurrent()) {
  await import('../dist/cli.js')
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../src/cli.ts')
}
