import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { storeKinds } from '../helpers/stores.js'

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'] as const
const WRITE_METHODS = new Set(['post', 'put', 'patch', 'delete'])
const OPEN_OPERATIONS = ['GET /healthz', 'GET /readyz', 'GET /openapi.json', 'GET /metrics']
const EXPECTED_OPERATIONS = ['POST /wishes', 'GET /wishes', 'GET /wishes/{id}', 'PUT /wishes/{id}', 'DELETE /wishes/{id}', ...OPEN_OPERATIONS]
const ERROR_REF = '#/components/schemas/Error'

interface Operation {
  key: string
  method: string
  path: string
  op: any
}

function operationsOf(doc: any): Operation[] {
  const out: Operation[] = []
  for (const [p, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      if (item[method]) out.push({ key: `${method.toUpperCase()} ${p}`, method, path: p, op: item[method] })
    }
  }
  return out
}

/**
 * The routes Fastify serves, from its route tree ("├── /wishes (POST, GET, HEAD)" lines nested by
 * four-character indents), as "METHOD /path/{param}". HEAD twins and the /docs UI are left out.
 */
function servedRoutes(app: FastifyInstance): Set<string> {
  const out = new Set<string>()
  const stack: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line)
    if (!m) continue
    stack.length = m[1]!.length / 4
    stack.push(m[2]!)
    const full = stack.join('').replace(/:([A-Za-z0-9_]+)/g, '{$1}')
    if (!m[3] || full === '/docs' || full.startsWith('/docs/')) continue
    for (const method of m[3].split(', ')) if (method !== 'HEAD') out.add(`${method} ${full}`)
  }
  return out
}

function resolveRef(doc: any, ref: string): any {
  assert.ok(ref.startsWith('#/'), `external $ref ${ref}`)
  let node = doc
  for (const part of ref.slice(2).split('/')) node = node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')]
  assert.ok(node !== undefined, `dangling $ref ${ref}`)
  return node
}

/** True when an `example` or a non-empty `examples` is reachable from node, following $refs. */
function hasExample(doc: any, node: any, seen = new Set<unknown>()): boolean {
  if (node === null || typeof node !== 'object' || seen.has(node)) return false
  seen.add(node)
  if (Array.isArray(node)) return node.some((n) => hasExample(doc, n, seen))
  if (node.example !== undefined) return true
  if (Array.isArray(node.examples) ? node.examples.length > 0 : node.examples && Object.keys(node.examples).length > 0) return true
  if (typeof node.$ref === 'string' && hasExample(doc, resolveRef(doc, node.$ref), seen)) return true
  return Object.values(node).some((v) => hasExample(doc, v, seen))
}

const kind = storeKinds()[0]!

describe(`OpenAPI (${kind.name})`, () => {
  let t: TestApp
  let doc: any
  before(async () => {
    t = await startTestApp(kind)
    const res = await t.inject({ method: 'GET', url: '/openapi.json' })
    assert.equal(res.status, 200, res.raw.slice(0, 300))
    doc = res.body
  })
  after(async () => { await t.close() })

  test('GET /openapi.json needs no key and is OpenAPI 3.1', async () => {
    const res = await t.inject({ method: 'GET', url: '/openapi.json' })
    assert.equal(res.status, 200)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    assert.match(res.body.openapi, /^3\.1\.\d+$/)
    assert.equal(typeof res.body.info.title, 'string')
    assert.equal(res.body.info.version, '2026-11-01.beta')
    assert.equal(typeof res.body.paths, 'object')
  })

  test('it documents every route the app serves, and only those', () => {
    const documented = new Set(operationsOf(doc).map((o) => o.key))
    const served = servedRoutes(t.app)
    for (const key of EXPECTED_OPERATIONS) {
      assert.ok(served.has(key), `the app does not serve ${key} (route tree parse?)`)
      assert.ok(documented.has(key), `${key} is not documented`)
    }
    assert.deepEqual([...served].sort(), [...documented].sort())
  })

  test('every operation has a unique operationId, a summary and a reachable example', () => {
    const ids = new Set<string>()
    for (const { key, op } of operationsOf(doc)) {
      assert.equal(typeof op.operationId, 'string', `${key}: operationId`)
      assert.ok(op.operationId.length > 0, `${key}: operationId`)
      assert.ok(!ids.has(op.operationId), `${key}: operationId ${op.operationId} is used twice`)
      ids.add(op.operationId)
      assert.equal(typeof op.summary, 'string', `${key}: summary`)
      assert.ok(op.summary.trim().length > 0, `${key}: summary`)

      if (op.requestBody) assert.ok(hasExample(doc, op.requestBody), `${key}: the request body has no example`)
      const success = Object.entries<any>(op.responses ?? {}).filter(([status, r]) => /^2/.test(status) && r.content)
      for (const [status, response] of success) {
        assert.ok(hasExample(doc, response), `${key}: the ${status} response has no example`)
      }
      assert.ok(hasExample(doc, op), `${key}: no example is reachable`)
    }
  })

  test('authenticated operations document 400, 401, 500; writes also 403, 413, 415', () => {
    assert.ok(Array.isArray(doc.security) && doc.security.length > 0, 'no default security')
    const schemes = doc.components?.securitySchemes ?? {}
    for (const requirement of doc.security) {
      for (const name of Object.keys(requirement)) {
        assert.equal(schemes[name]?.type, 'http')
        assert.equal(String(schemes[name]?.scheme).toLowerCase(), 'bearer')
      }
    }
    for (const { key, method, op } of operationsOf(doc)) {
      const secured = op.security === undefined ? doc.security.length > 0 : op.security.length > 0
      assert.equal(secured, !OPEN_OPERATIONS.includes(key), `${key}: security`)
      if (!secured) continue
      const statuses = Object.keys(op.responses ?? {})
      for (const status of ['400', '401', '500']) assert.ok(statuses.includes(status), `${key} does not document ${status}`)
      if (WRITE_METHODS.has(method)) {
        for (const status of ['403', '413', '415']) assert.ok(statuses.includes(status), `${key} does not document ${status}`)
      }
    }
  })

  test('error responses reference the Error component', () => {
    const error = resolveRef(doc, ERROR_REF)
    assert.ok(hasExample(doc, error), 'Error has no example')
    const inner = error.properties?.error
    assert.ok(inner, 'Error has no error member')
    for (const member of ['type', 'code', 'message', 'request_id']) {
      assert.ok(inner.properties?.[member], `Error lacks ${member}`)
      assert.ok(inner.required?.includes(member), `Error does not require ${member}`)
    }
    for (const member of ['param', 'errors']) assert.ok(inner.properties?.[member], `Error lacks ${member}`)

    let count = 0
    for (const { key, op } of operationsOf(doc)) {
      for (const [status, response] of Object.entries<any>(op.responses ?? {})) {
        if (!/^[45]/.test(status)) continue
        count++
        const resolved = response.$ref ? resolveRef(doc, response.$ref) : response
        assert.equal(typeof resolved.description, 'string', `${key} ${status}: description`)
        assert.equal(resolved.content?.['application/json']?.schema?.$ref, ERROR_REF, `${key} ${status} does not use Error`)
      }
    }
    assert.ok(count > 0)
  })

  test('redocly lint passes with no warnings', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-openapi-'))
    try {
      const file = path.join(dir, 'openapi.json')
      fs.writeFileSync(file, JSON.stringify(doc, null, 2))
      const result = spawnSync(path.join(REPO_ROOT, 'node_modules/.bin/redocly'), ['lint', file, '--config', 'redocly.yaml'], {
        cwd: REPO_ROOT,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
        encoding: 'utf8',
        timeout: 120_000,
      })
      const output = `${result.stdout ?? ''}\n${result.stderr ?? ''}`
      assert.equal(result.error, undefined, String(result.error))
      assert.equal(result.status, 0, output)
      assert.doesNotMatch(output, /You have \d+ warnings?/, output)
      assert.doesNotMatch(output, /(Warning|Error) was generated by/, output)
      assert.match(output, /valid/i, output)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  test('GET /docs needs no key and is an HTML page', async () => {
    let res = await t.inject({ method: 'GET', url: '/docs' })
    if (res.status >= 300 && res.status < 400) {
      const location = new URL(String(res.headers.location), 'http://localhost/docs')
      res = await t.inject({ method: 'GET', url: location.pathname + location.search })
    }
    assert.equal(res.status, 200)
    assert.match(String(res.headers['content-type']), /^text\/html/)
    assert.match(res.raw, /<html[\s>]/i)
  })
})
