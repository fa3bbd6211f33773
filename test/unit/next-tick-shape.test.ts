import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'

/**
 * lib/next-tick-shape.ts keeps one nextTick entry alive, so that a server that idles after starting keeps
 * `nextTick`'s inline caches monomorphic. Each case runs a child that warms `nextTick` up, idles through
 * full GCs, makes entries again (as the first requests would), and prints V8's view of `nextTick`
 * (`%DebugPrint`, which lists each feedback slot's state).
 */

const MODULE = fileURLToPath(new URL('../../src/lib/next-tick-shape.ts', import.meta.url))

function literalSlotStates(keep: boolean): Promise<string[]> {
  const script = `
    ${keep ? `const { keptTickEntry } = await import(${JSON.stringify(MODULE)})` : ''}
    const noop = () => {}
    const turn = () => new Promise((resolve) => setImmediate(resolve))
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 3000; i++) process.nextTick(noop)
      await turn()
    }
    ${keep ? `if (typeof keptTickEntry()?.callback !== 'function') throw new Error('no nextTick entry was kept')` : ''}
    // Idle, as a server between its start and its first request: full GCs, with time for V8's
    // background threads to finish each.
    for (let i = 0; i < 6; i++) { globalThis.gc(); await new Promise((resolve) => setTimeout(resolve, 10)) }
    // Then requests again: a burst of entries, so that nextTick has feedback to print whatever the GCs
    // did to it.
    for (let i = 0; i < 3000; i++) process.nextTick(noop)
    await turn()
    eval('%DebugPrint(process.nextTick)')
  `
  // The child's stdout is a file: V8 prints through C's stdio, and into a pipe (non-blocking under
  // node's test runner) part of the print was lost.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-next-tick-'))
  const file = path.join(dir, 'stdout.txt')
  const out = fs.openSync(file, 'w')
  return new Promise<string[]>((resolve, reject) => {
    // --no-flush-bytecode: otherwise the idle GCs may drop nextTick's bytecode and its feedback with
    // it (a busy server calls nextTick too often for that).
    const flags = ['--import', 'tsx', '--expose-gc', '--allow-natives-syntax', '--no-flush-bytecode', '--input-type=module', '-e', script]
    const child = spawn(process.execPath, flags, { stdio: ['ignore', out, 'pipe'] })
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`child exited ${code}: ${stderr}`))
      // The tick entry's literal: `- slot #54 DefineKeyedOwnPropertyInLiteral MEGAMORPHIC {`.
      const stdout = fs.readFileSync(file, 'utf8')
      resolve([...stdout.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]!))
    })
  }).finally(() => {
    fs.closeSync(out)
    fs.rmSync(dir, { recursive: true, force: true })
  })
}

test('an idle process keeps nextTick monomorphic with one entry kept alive', async (t) => {
  // V8 collects the maps on its own schedule: the case without the module gets three chances to show it.
  let without: string[] = []
  for (let attempt = 0; attempt < 3 && !without.includes('MEGAMORPHIC'); attempt++) without = await literalSlotStates(false)
  if (!without.includes('MEGAMORPHIC')) {
    // Another V8 may keep the shapes or print feedback differently: then there is nothing to show here.
    t.skip(`this Node (${process.version}) keeps nextTick's literal slots without help: ${without.join(', ') || 'none printed'}`)
    return
  }
  for (let run = 0; run < 3; run++) {
    const kept = await literalSlotStates(true)
    assert.ok(kept.length >= 4, `the literal's slots are printed: ${kept.join(', ')}`)
    assert.ok(!kept.includes('MEGAMORPHIC'), `with an entry kept, no literal slot turns megamorphic: ${kept.join(', ')}`)
  }
})
