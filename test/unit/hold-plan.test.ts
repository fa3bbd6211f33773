import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { type Database, openDatabase } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { loadConfig } from '../../src/config.js'
import { systemClock } from '../../src/lib/clock.js'
import { holdStatement } from '../../src/modules/mandates/repository.js'
import { createServices } from '../../src/services.js'
import { genericPlan } from '../helpers/plans.js'
import { openStore, type PostgresTestStore } from '../helpers/stores.js'

/**
 * The mandate hold of every payment (mandates/repository.ts) finds its mandate by the primary key,
 * whatever PostgreSQL's statistics say. It is a prepared statement: a generic plan made while the
 * table held a few rows used an index led by account_id as readily as the key, and kept as the table
 * grew, walked every mandate of the account for each payment (30,000 mandates: 2,500 → 500 payments a
 * second; docs/performance.md, twenty-first pass).
 */

const pgUrl = process.env.TEST_DATABASE_URL

describe('the mandate hold\'s plan (postgres)', { skip: !pgUrl && 'PostgreSQL only (TEST_DATABASE_URL not set)' }, () => {
  let store: PostgresTestStore
  let one: Database
  let accountId: string
  let mandateId: string

  before(async () => {
    store = await openStore('postgres')
    await migrateToLatest(store.db)
    one = openDatabase({ databaseUrl: pgUrl!, postgresSchema: store.postgres.schema, poolSize: 1 })
    const services = createServices({ config: loadConfig({}), db: store.db, clock: systemClock })
    accountId = (await services.accounts.createKey('hold-plan', 'write')).account_id
    mandateId = (await services.mandates.create({ accountId, requestId: null }, {
      protocol: 'ap2', max_amount: 1000, budget_amount: 10_000, usage: 'multi_use', currency: 'USD',
      expires_at: new Date(Date.now() + 86_400_000).toISOString(),
    })).id
  })
  after(async () => {
    await one.close()
    await store.close()
  })

  test('a generic plan made on a one-row table updates the mandate through its primary key, through no account index', async () => {
    const now = new Date().toISOString()
    const query = holdStatement(one.kysely, { accountId, mandateId, amount: 100, currency: 'USD', now })
    const plan = await one.kysely.connection().execute(async (connection) => {
      await sql`prepare hold_plan as ${sql.raw(query.sql)}`.execute(connection)
      try {
        return await genericPlan(connection, 'hold_plan', query.parameters)
      } finally {
        await sql`deallocate hold_plan`.execute(connection)
      }
    })
    assert.match(plan, /Index Scan using mandates_pkey on mandates/, plan)
    assert.doesNotMatch(plan, /mandates_account_/, plan)
  })
})
