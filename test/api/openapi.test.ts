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
const OPEN_OPERATIONS = ['GET /healthz', 'GET /readyz', 'GET /openapi.json', 'GET /metrics', 'GET /.well-known/jwks.json', 'GET /.well-known/acp.json']
const EXPECTED_OPERATIONS = ['POST /wishes', 'GET /wishes', 'GET /wishes/{id}', 'PUT /wishes/{id}', 'DELETE /wishes/{id}', ...OPEN_OPERATIONS]
const ERROR_REF = '#/components/schemas/Error'
/**
 * ACP's Delegate Payment route answers ACP's flat error `{type, code, message, param?, supported_versions?}`
 * (src/modules/acp/routes.ts), declared per status; only what is answered on the connection before
 * routing (src/http/client-errors.ts) keeps Wishpay's envelope there. test/api/acp-delegate-payment.test.ts
 * checks the bodies against the official schema.
 */
const ACP_OPERATIONS = new Set(['delegatePayment'])
const CONNECTION_STATUSES = new Set(['408', '417', '431'])

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
 * four-character indents), as "METHOD /path/{param}". HEAD twins, the /docs UI and the /dashboard are left out.
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
    if (!m[3] || /^\/(docs|dashboard)(\/|\*|$)/.test(full)) continue
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

  test('each error status has its own schema: the envelope with type and code narrowed to enumerations, and its own example', () => {
    const envelope = resolveRef(doc, ERROR_REF)
    const inner = envelope.properties?.error
    assert.ok(inner, 'Error has no error member')
    for (const member of ['type', 'code', 'message', 'request_id']) {
      assert.ok(inner.properties?.[member], `Error lacks ${member}`)
      assert.ok(inner.required?.includes(member), `Error does not require ${member}`)
    }
    for (const member of ['param', 'errors']) assert.ok(inner.properties?.[member], `Error lacks ${member}`)

    const messages = new Set<string>()
    let count = 0
    for (const { key, op } of operationsOf(doc)) {
      for (const [status, response] of Object.entries<any>(op.responses ?? {})) {
        if (!/^[45]/.test(status)) continue
        count++
        const resolved = response.$ref ? resolveRef(doc, response.$ref) : response
        assert.equal(typeof resolved.description, 'string', `${key} ${status}: description`)
        const schema = resolved.content?.['application/json']?.schema
        if (ACP_OPERATIONS.has(op.operationId) && !CONNECTION_STATUSES.has(status)) {
          assert.equal(schema?.$ref, undefined, `${key} ${status}: ACP's flat error, not Wishpay's`)
          assert.equal(schema?.type, 'object', `${key} ${status}: ACP error`)
          assert.equal(schema.additionalProperties, false, `${key} ${status}: ACP error is closed`)
          assert.deepEqual(Object.keys(schema.properties).sort(), ['code', 'message', 'param', 'supported_versions', 'type'], `${key} ${status}: ACP error members`)
          assert.deepEqual([...schema.required].sort(), ['code', 'message', 'type'], `${key} ${status}: ACP error required members`)
          continue
        }
        assert.equal(schema?.$ref, `#/components/schemas/Error${status}`, `${key} ${status} does not use Error${status}`)
      }
    }
    assert.ok(count > 0)

    for (const [name, schema] of Object.entries<any>(doc.components.schemas)) {
      const status = /^Error(\d{3})$/.exec(name)?.[1]
      if (!status) continue
      assert.ok(schema.allOf?.some((s: any) => s.$ref === ERROR_REF), `${name} is not the Error envelope`)
      const narrowed = schema.allOf.find((s: any) => s.properties?.error)?.properties.error.properties
      const types: string[] = narrowed?.type?.enum ?? []
      const codes: string[] = narrowed?.code?.enum ?? []
      assert.ok(types.length > 0 && codes.length > 0, `${name}: type and code are not enumerations`)
      assert.equal(schema.examples?.length, 1, `${name}: one example`)
      const example = schema.examples[0].error
      assert.ok(types.includes(example.type), `${name}: example type ${example.type}`)
      assert.ok(codes.includes(example.code), `${name}: example code ${example.code}`)
      assert.match(example.request_id, /^req_[0-9a-z]+$/)
      assert.ok(!messages.has(example.message), `${name}: the same example as another status`)
      messages.add(example.message)
    }
    assert.ok(messages.size >= 10)
  })

  test('servers is relative: "Try it out" calls the server the document came from, on any port', () => {
    assert.deepEqual(doc.servers.map((s: any) => s.url), ['/'])
    assert.equal(new URL(doc.servers[0].url, 'http://127.0.0.1:4567/openapi.json').origin, 'http://127.0.0.1:4567')
  })

  test('a member or parameter with a default is never required, and a body that may be left out is not required', () => {
    const visit = (where: string, schema: any): void => {
      if (!schema || typeof schema !== 'object') return
      if (schema.$ref) return
      for (const [name, member] of Object.entries<any>(schema.properties ?? {})) {
        if (member && 'default' in member) assert.ok(!schema.required?.includes(name), `${where}.${name} has a default and is required`)
        visit(`${where}.${name}`, member)
      }
      for (const sub of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) visit(where, sub)
      if (schema.items) visit(`${where}[]`, schema.items)
    }
    let optionalBodies = 0
    for (const { key, op } of operationsOf(doc)) {
      for (const parameter of op.parameters ?? []) {
        const p = parameter.$ref ? resolveRef(doc, parameter.$ref) : parameter
        if (p.schema && 'default' in p.schema) assert.equal(p.required, false, `${key} ${p.name} has a default and is required`)
      }
      if (!op.requestBody) continue
      const schema = op.requestBody.content['application/json'].schema
      visit(`${key} body`, schema)
      // The app validates an absent POST or PUT body as {} (src/app.ts): it may be left out exactly
      // when no member is required.
      const needed = (schema.required ?? []).length > 0 || (schema.else?.required ?? []).length > 0
      assert.equal(op.requestBody.required, needed, `${key}: requestBody.required`)
      if (!needed) optionalBodies++
    }
    assert.ok(optionalBodies >= 4, 'revoke, refunds and the two updates take an optional body')
    const payment = doc.paths['/payments'].post.requestBody.content['application/json'].schema
    assert.deepEqual([...payment.required].sort(), ['amount'])
    // ...and mandate_id unless an ACP vault_token is sent, with its merchant and checkout session.
    assert.deepEqual(payment.if.required, ['vault_token'])
    assert.deepEqual([...payment.then.required].sort(), ['checkout_session_id', 'merchant_id'])
    assert.deepEqual(payment.else.required, ['mandate_id'])
    const mandate = doc.paths['/mandates'].post.requestBody.content['application/json'].schema
    assert.deepEqual([...mandate.required].sort(), ['protocol'])
    // ...and max_amount and expires_at unless ap2.open_payment_mandate gives them.
    assert.deepEqual(mandate.if.required, ['ap2'])
    assert.deepEqual([...mandate.else.required].sort(), ['expires_at', 'max_amount'])
  })

  test('every POST declares the Idempotency-Key header, 409 and 422; no other method does', () => {
    for (const { key, method, op } of operationsOf(doc)) {
      const names = (op.parameters ?? []).map((p: any) => (p.$ref ? resolveRef(doc, p.$ref) : p)).filter((p: any) => p.in === 'header').map((p: any) => p.name)
      if (method !== 'post') {
        assert.ok(!names.includes('Idempotency-Key'), `${key} declares Idempotency-Key`)
        continue
      }
      // ACP's route declares its own required API-Version and Idempotency-Key (src/http/openapi.ts protocolParameters).
      assert.deepEqual(names, op.operationId === 'delegatePayment' ? ['API-Version', 'Idempotency-Key'] : ['Idempotency-Key'], key)
      for (const status of ['409', '422']) assert.ok(op.responses[status], `${key} does not declare ${status}`)
      for (const status of ['201', '200', '404', '422']) {
        if (op.responses[status]) assert.ok(op.responses[status].headers?.['Idempotent-Replayed'], `${key} ${status}: Idempotent-Replayed`)
      }
    }
  })

  test('every response declares its headers: Request-Id and API-Version always, Retry-After, WWW-Authenticate, RateLimit where sent', () => {
    const header = (response: any, name: string) => {
      const h = response.headers?.[name]
      return h?.$ref ? resolveRef(doc, h.$ref) : h
    }
    for (const { key, op } of operationsOf(doc)) {
      const authenticated = (op.security ?? doc.security).length > 0
      for (const [status, response] of Object.entries<any>(op.responses)) {
        for (const name of ['Request-Id', 'API-Version']) assert.equal(header(response, name)?.required, true, `${key} ${status}: ${name}`)
        if (status === '429' || status === '503') assert.equal(header(response, 'Retry-After')?.required, true, `${key} ${status}: Retry-After`)
        if (status === '409') assert.ok(header(response, 'Retry-After'), `${key} 409: Retry-After`)
        if (status === '401') assert.equal(header(response, 'WWW-Authenticate')?.required, true, `${key} 401: WWW-Authenticate`)
        if (authenticated && status !== '403') {
          for (const name of ['RateLimit', 'RateLimit-Policy']) assert.ok(header(response, name), `${key} ${status}: ${name}`)
        }
      }
    }
  })

  test('request examples do not go stale: future dates are far away, and no idempotency key is one the README uses', () => {
    const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8')
    const readmeKeys = new Set([...readme.matchAll(/Idempotency-Key: ([^"\s\\]+)|"idempotency_key": ?"([^"]+)"/g)].map((m) => m[1] ?? m[2]))
    assert.ok(readmeKeys.size > 0, 'the README shows idempotency keys')
    const examples: unknown[] = []
    const collect = (node: any): void => {
      if (!node || typeof node !== 'object') return
      if (Array.isArray(node)) return node.forEach(collect)
      if (node.example !== undefined) examples.push(node.example)
      if (Array.isArray(node.examples)) examples.push(...node.examples)
      else if (node.examples && typeof node.examples === 'object') examples.push(...Object.values<any>(node.examples).map((e) => e.value))
      for (const v of Object.values(node)) collect(v)
    }
    for (const { op } of operationsOf(doc)) collect([op.requestBody, op.parameters?.map((p: any) => (p.$ref ? resolveRef(doc, p.$ref) : p))])
    const text = JSON.stringify(examples)
    assert.ok(text.includes('expires_at'), 'a request example sets expires_at')
    for (const [date] of text.matchAll(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g)) assert.ok(date >= '2090', `request example date ${date} will pass`)
    for (const k of readmeKeys) assert.ok(!text.includes(`"${k}"`), `request example uses the README's idempotency key ${k}`)
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
