/** Writes the generated OpenAPI document to a file: `tsx scripts/write-openapi.ts out.json`. */
import fs from 'node:fs'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'

const out = process.argv[2] ?? 'openapi.gen.json'
const db = openDatabase({ sqlitePath: ':memory:' })
const app = await buildApp({ config: loadConfig({}), db })
await app.ready()
fs.writeFileSync(out, `${JSON.stringify(app.swagger(), null, 2)}\n`)
await app.close()
await db.close()
