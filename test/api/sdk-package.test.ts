import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import ts from 'typescript'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { ROOT, runNode } from '../helpers/cli.js'
import { openStore } from '../helpers/stores.js'

/**
 * "npm install the SDK from the repository and pay in five lines": the SDK is packed as npm would
 * publish it, installed into an empty project outside the repository, and a plain-node script and
 * a strict TypeScript program use it against a listening server.
 */

const run = promisify(execFile)

const FIVE_LINES = `import { Wishpay } from '@wishpay/sdk'
const wishpay = new Wishpay({ apiKey: process.env.WISHPAY_KEY, baseUrl: process.env.WISHPAY_URL })
const wish = await wishpay.wishes.create({ query: 'Noise-cancelling headphones', budget: { max: 199.99 } })
const mandate = await wishpay.mandates.create({ wish_id: wish.id, protocol: wish.protocol, max_amount: 19999, expires_at: '2099-01-01T00:00:00Z' })
const payment = await wishpay.payments.create({ mandate_id: mandate.id, amount: 19999 })
`

describe('the SDK as an installed package', () => {
  let dir: string
  let t: TestApp
  let baseUrl: string

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-sdk-package-'))
    const npm = (args: string[], cwd: string) => run('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline'], { cwd, maxBuffer: 16 * 1024 * 1024 })
    // `npm pack` runs the package's prepare script, which builds dist/ as publishing would.
    await npm(['pack', '--pack-destination', dir], path.join(ROOT, 'packages/sdk'))
    const tarball = fs.readdirSync(dir).find((f) => f.endsWith('.tgz'))
    assert.ok(tarball, 'npm pack made a tarball')
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'sdk-user', private: true, type: 'module' }))
    await npm(['install', `./${tarball}`], dir)

    t = await startTestApp({ name: 'sqlite', open: () => openStore('sqlite') })
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
  })
  after(async () => {
    await t?.close()
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  test('plain node pays in five lines with the installed package', async () => {
    const a = await t.account()
    const script = path.join(dir, 'pay.mjs')
    fs.writeFileSync(script, `${FIVE_LINES}console.log(JSON.stringify(payment))\n`)
    const result = await runNode([script], { WISHPAY_KEY: a.key, WISHPAY_URL: baseUrl }, 'pay.mjs')
    assert.equal(result.code, 0, result.stderr)
    const payment = JSON.parse(result.stdout) as { status: string, amount: number }
    assert.deepEqual([payment.status, payment.amount], ['succeeded', 19999])
  })

  test('the package\'s types compile the same five lines under strict settings, and reject a wrong one', () => {
    const file = path.join(dir, 'pay.ts')
    const typed = FIVE_LINES.replace('process.env.WISHPAY_KEY', "'sk_test'").replace('process.env.WISHPAY_URL', "'http://127.0.0.1:3000'")
    fs.writeFileSync(file, `${typed}const status: 'pending' | 'processing' | 'succeeded' | 'failed' | 'refunded' = payment.status
void status
// @ts-expect-error amount is an integer count of minor units, not a string
await wishpay.payments.create({ mandate_id: mandate.id, amount: '19999' })
export {}
`)
    const program = ts.createProgram([file], {
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      types: [],
    })
    const diagnostics = ts.formatDiagnostics(ts.getPreEmitDiagnostics(program), {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => dir,
      getNewLine: () => '\n',
    })
    assert.equal(diagnostics, '')
  })
})
