import assert from 'node:assert/strict'
import fs from 'node:fs'
import { test } from 'node:test'
import { buildOpenApiDocument, renderSdkSchema, SDK_SCHEMA_PATH } from '../../scripts/generate-sdk.js'

/** CI's staleness check of the SDK: the committed generated types are what the current API generates. */

test('packages/sdk/src/generated/schema.ts matches the live OpenAPI document', async () => {
  const expected = await renderSdkSchema(await buildOpenApiDocument())
  const committed = fs.existsSync(SDK_SCHEMA_PATH) ? fs.readFileSync(SDK_SCHEMA_PATH, 'utf8') : ''
  // Not assert.equal on the texts: a 10,000-line diff helps nobody; the command does.
  assert.ok(committed === expected, 'The SDK\'s generated types are stale: run `npm run sdk:generate` and commit packages/sdk/src/generated/schema.ts')
})
