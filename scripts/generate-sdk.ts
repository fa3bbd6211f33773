/**
 * Writes the SDK's generated types, packages/sdk/src/generated/schema.ts, from the OpenAPI document
 * the app serves at /openapi.json: `npm run sdk:generate`. The document is built in-process as
 * scripts/write-openapi.ts does, so no server has to run. test/api/sdk-generated.test.ts renders it
 * again and fails when the committed file is stale.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import openapiTS, { astToString } from 'openapi-typescript'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'

export const SDK_SCHEMA_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../packages/sdk/src/generated/schema.ts')

const HEADER = `/**
 * GENERATED FILE: do not edit. The types of Wishpay's HTTP API, made by openapi-typescript (the version
 * pinned in the root package.json) from the OpenAPI document the server serves at /openapi.json.
 * Regenerate with \`npm run sdk:generate\` (scripts/generate-sdk.ts); \`npm test\` fails when it is stale.
 */

`

/** The app's OpenAPI document, with the default configuration (nothing from the environment). */
export async function buildOpenApiDocument(): Promise<unknown> {
  const db = openDatabase({ sqlitePath: ':memory:' })
  try {
    const app = await buildApp({ config: loadConfig({}), db })
    try {
      await app.ready()
      return app.swagger()
    } finally {
      await app.close()
    }
  } finally {
    await db.close()
  }
}

/** The text of schema.ts for a document: the printer's output is deterministic, so no formatter is needed. */
export async function renderSdkSchema(document: unknown): Promise<string> {
  const ast = await openapiTS(document as Parameters<typeof openapiTS>[0])
  return HEADER + astToString(ast)
}

async function main(): Promise<void> {
  const text = await renderSdkSchema(await buildOpenApiDocument())
  fs.mkdirSync(path.dirname(SDK_SCHEMA_PATH), { recursive: true })
  fs.writeFileSync(SDK_SCHEMA_PATH, text)
  console.log(`wrote ${path.relative(process.cwd(), SDK_SCHEMA_PATH)}`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main()
