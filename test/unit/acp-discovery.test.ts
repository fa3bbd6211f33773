import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { ACP_DISCOVERY_CACHE_CONTROL, ACP_DISCOVERY_PATH, AcpDiscoveryDocumentSchema, acpDiscoveryDocument } from '../../src/modules/acp/discovery.js'

const ajv = (addFormatsModule as unknown as (a: Ajv) => Ajv)(new Ajv({ strict: false, allErrors: true }))
const validate = ajv.compile(AcpDiscoveryDocumentSchema)

describe('acpDiscoveryDocument', () => {
  test('the RFC shape: protocol, api_base_url, transports, capabilities with delegate_payment', () => {
    const doc = acpDiscoveryDocument('https://pay.example.com/')
    assert.deepEqual(doc, {
      protocol: { name: 'acp', version: '2026-04-17', supported_versions: ['2026-04-17'] },
      api_base_url: 'https://pay.example.com',
      transports: ['rest'],
      capabilities: { services: ['delegate_payment'] },
    })
    assert.ok(validate(doc), JSON.stringify(validate.errors))
    assert.equal(ACP_DISCOVERY_PATH, '/.well-known/acp.json')
    assert.equal(ACP_DISCOVERY_CACHE_CONTROL, 'public, max-age=3600')
  })

  test('options, a base path, and the latest version last', () => {
    const doc = acpDiscoveryDocument('https://pay.example.com/acp//', { documentationUrl: 'https://docs.example.com/acp', supportedCurrencies: ['usd', 'eur'] })
    assert.equal(doc.api_base_url, 'https://pay.example.com/acp')
    assert.equal(doc.protocol.documentation_url, 'https://docs.example.com/acp')
    assert.deepEqual(doc.capabilities.supported_currencies, ['usd', 'eur'])
    assert.equal(doc.protocol.supported_versions.at(-1), doc.protocol.version)
    assert.ok(validate(doc))
    assert.deepEqual(acpDiscoveryDocument('https://pay.example.com'), acpDiscoveryDocument('https://pay.example.com/'))
  })

  test('the RFC examples are valid against the mirrored schema, and unknown members are not', () => {
    const minimal = {
      protocol: { name: 'acp', version: '2025-09-29', supported_versions: ['2025-09-29'] },
      api_base_url: 'https://merchant.example.com/api', transports: ['rest'], capabilities: { services: ['checkout'] },
    }
    assert.ok(validate(minimal))
    assert.equal(validate({ ...minimal, merchant_id: 'm_1' }), false)
    assert.equal(validate({ ...minimal, transports: ['grpc'] }), false)
  })

  test('a base URL that is not absolute http(s) without query is refused', () => {
    for (const bad of ['pay.example.com', 'ftp://pay.example.com', 'https://pay.example.com/?x=1', 'https://u:p@pay.example.com', 'https://pay.example.com/#f']) {
      assert.throws(() => acpDiscoveryDocument(bad), TypeError, bad)
    }
  })
})
