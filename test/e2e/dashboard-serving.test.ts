import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import Fastify from 'fastify'
import { dashboardRoutes } from '../../src/http/dashboard.js'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { storeKinds } from '../helpers/stores.js'
import { DASHBOARD_INDEX, ensureDashboardBuilt } from './browser.js'

/** How the server answers /dashboard (src/http/dashboard.ts), without a browser. */

const kind = storeKinds()[0]!

describe('dashboard: serving', () => {
  let t: TestApp
  let script: string
  before(async () => {
    await ensureDashboardBuilt()
    script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(fs.readFileSync(DASHBOARD_INDEX, 'utf8'))![1]!
    t = await startTestApp(kind)
  })
  after(async () => { await t.close() })

  test('the app\'s page at /dashboard and every client route under it, under a strict CSP and without a key', async () => {
    for (const url of ['/dashboard', '/dashboard/', '/dashboard/payments/pay_123?status=succeeded']) {
      const res = await t.inject({ method: 'GET', url })
      assert.equal(res.status, 200, url)
      assert.match(String(res.headers['content-type']), /^text\/html/, url)
      assert.match(res.raw, /<div id="app"><\/div>/, url)
      assert.doesNotMatch(res.raw, /<script(?![^>]*\bsrc=)[^>]*>/, `${url}: no inline script`)
      const csp = String(res.headers['content-security-policy'])
      assert.match(csp, /default-src 'none'/, url)
      assert.match(csp, /script-src 'self'(;|$)/, url)
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/, url)
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url)
      assert.equal(res.headers['cache-control'], 'no-cache', url)
      assert.match(String(res.headers['request-id']), /^req_/, url)
    }
  })

  test('built assets are cached for good; a missing one is the API\'s 404, not cached', async () => {
    const asset = await t.inject({ method: 'GET', url: script })
    assert.equal(asset.status, 200)
    assert.match(String(asset.headers['content-type']), /javascript/)
    assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')
    assert.equal(asset.headers['x-content-type-options'], 'nosniff')

    const missing = await t.inject({ method: 'GET', url: '/dashboard/assets/missing-0000.js' })
    assert.equal(missing.status, 404)
    assert.equal(missing.body.error.code, 'route_not_found')
    assert.notEqual(missing.headers['cache-control'], 'public, max-age=31536000, immutable')

    for (const url of ['/dashboard/../package.json', '/dashboard/%2e%2e/package.json', '/dashboard/..%2fpackage.json']) {
      const res = await t.inject({ method: 'GET', url })
      // Refused (404, or 400 from @fastify/send for an encoded separator) in the API's envelope.
      assert.ok([400, 404].includes(res.status), `${url}: ${res.status}`)
      assert.equal(typeof res.body.error.code, 'string', url)
    }
  })

  test('it is not part of the API document', async () => {
    const doc = (await t.inject({ method: 'GET', url: '/openapi.json' })).body
    assert.deepEqual(Object.keys(doc.paths).filter((p) => p.startsWith('/dashboard')), [])
  })

  test('without a build, /dashboard says how to make one', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-no-dashboard-'))
    const app = Fastify()
    try {
      await app.register(dashboardRoutes, { root: empty })
      for (const url of ['/dashboard', '/dashboard/wishes']) {
        const res = await app.inject({ method: 'GET', url })
        assert.equal(res.statusCode, 503, url)
        assert.match(String(res.headers['content-type']), /^text\/html/)
        assert.match(res.body, /npm run build:dashboard/)
      }
    } finally {
      await app.close()
      fs.rmSync(empty, { recursive: true, force: true })
    }
  })
})
