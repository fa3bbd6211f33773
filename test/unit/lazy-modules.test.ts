import assert from 'node:assert/strict'
import * as nodeModule from 'node:module'
import { after, before, describe, test } from 'node:test'
import { MessageChannel } from 'node:worker_threads'
import type { TestApp } from '../helpers/app.js'

/**
 * Code that only some requests need is imported on first use, so that a server which never sees them
 * does not hold it (docs/performance.md, peak RSS): @sd-jwt/* until an AP2 mandate is presented
 * (src/modules/ap2/open-mandate.ts), jose until something is signed or verified (src/lib/jose.ts),
 * @fastify/swagger-ui until /docs is opened (src/http/openapi.ts). A module resolve hook, registered
 * before anything of the app is imported, reports every module this process loads.
 */

const HOOKS = `
let port
export function initialize(data) { port = data.port }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  port.postMessage(resolved.url)
  return resolved
}`

/** `module.registerHooks` (Node 22.15 and later): not in @types/node 20 (Node 20 is the oldest runtime here). */
type RegisterHooks = (hooks: {
  resolve(specifier: string, context: unknown, next: (specifier: string, context: unknown) => { url: string }): { url: string }
}) => unknown
const registerHooks = (nodeModule as { registerHooks?: RegisterHooks }).registerHooks

const loaded = new Set<string>()
const { port1, port2 } = new MessageChannel()
if (registerHooks) {
  // In this thread, as each import resolves. registerHooks replaces module.register, which is deprecated
  // (DEP0205, a runtime warning from Node 26); the channel above is then unused.
  registerHooks({
    resolve(specifier, context, next) {
      const resolved = next(specifier, context)
      loaded.add(resolved.url)
      return resolved
    },
  })
} else {
  nodeModule.register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, import.meta.url, { data: { port: port2 }, transferList: [port2] })
  port1.on('message', (url: string) => loaded.add(url))
}
// The hook thread's messages must not keep the test process alive once the tests are done.
port1.unref()

let markers = 0
/**
 * module.register's hook posts from its own thread, in order on one port: once a new marker module's
 * URL has come, every import before it has been reported. registerHooks' hook has reported it already.
 */
async function settled(): Promise<void> {
  const marker = `data:text/javascript,export default ${++markers}`
  await import(marker)
  while (!loaded.has(marker)) await new Promise((resolve) => port1.once('message', resolve))
}

const loadedPackage = (name: string) => [...loaded].some((url) => url.includes(`/node_modules/${name}/`))

describe('modules loaded on first use', () => {
  let t: TestApp

  before(async () => {
    const [{ startTestApp }, { storeKinds }] = await Promise.all([import('../helpers/app.js'), import('../helpers/stores.js')])
    t = await startTestApp(storeKinds()[0]!)
  })
  after(async () => { await t.close() })

  test('@sd-jwt, jose and swagger-ui are not loaded by building the app and serving requests that do not need them', async () => {
    const account = await t.account()
    const answers = await Promise.all([
      t.inject({ method: 'GET', url: '/openapi.json' }),
      t.inject({ method: 'POST', url: '/wishes', headers: { authorization: `Bearer ${account.key}` }, payload: { query: 'a kettle' } }),
    ])
    assert.deepEqual(answers.map((a) => a.status), [200, 201])
    await settled()
    assert.ok(loadedPackage('kysely'), 'the hook sees the app\'s imports')
    assert.ok(!loadedPackage('@sd-jwt/decode'), '@sd-jwt/decode was loaded at start-up')
    assert.ok(!loadedPackage('@sd-jwt/crypto-nodejs'), '@sd-jwt/crypto-nodejs was loaded at start-up')
    assert.ok(!loadedPackage('jose'), 'jose was loaded at start-up')
    assert.ok(!loadedPackage('@fastify/swagger-ui'), '@fastify/swagger-ui was loaded at start-up')
  })

  test('swagger-ui is loaded when /docs is opened', async () => {
    const page = await t.inject({ method: 'GET', url: '/docs/' })
    assert.equal(page.status, 200)
    await settled()
    assert.ok(loadedPackage('@fastify/swagger-ui'))
  })

  test('@sd-jwt/decode is loaded when a mandate\'s disclosures are read', async () => {
    const { disclose } = await import('../../src/modules/ap2/open-mandate.js')
    // Not a valid mandate: reading it is enough to need the decoder.
    await disclose('e30.e30.c2ln~', {}).catch(() => undefined)
    await settled()
    assert.ok(loadedPackage('@sd-jwt/decode'))
  })

  test('jose is loaded when a key is checked', async () => {
    const { checkTrustedJwk } = await import('../../src/modules/trusted-keys/jwk.js')
    // Base64url members of the right shape but not a point on the curve: jose's import is what refuses it.
    const checked = await checkTrustedJwk({ kty: 'EC', kid: 'lazy', crv: 'P-256', x: 'AAAA', y: 'AAAA' })
    assert.ok('problem' in checked)
    await settled()
    assert.ok(loadedPackage('jose'))
  })
})
