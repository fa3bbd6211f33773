import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Kysely, sql } from 'kysely'
import { type Database, openDatabase } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { loadConfig } from '../../src/config.js'
import { systemClock } from '../../src/lib/clock.js'
import { countMandates, holdStatement } from '../../src/modules/mandates/repository.js'
import { countPayments, findPayment } from '../../src/modules/payments/repository.js'
import { createServices } from '../../src/services.js'
import { genericPlan, preparedPlan } from '../helpers/plans.js'
import { openStore, type PostgresTestStore } from '../helpers/stores.js'

/**
 * PostgreSQL prepares the statements built from templates once a connection and may keep a generic plan
 * for each (db/prepared-statements.ts). A plan made while the tables held a few rows, as when a server
 * starts on a new database, costs every index led by account_id alike; kept as the tables grew without
 * an ANALYZE, one that read a row "by account and id" through the account's index walked every row of the
 * account for each request (docs/performance.md, twenty-first and twenty-second passes). These plans are
 * made on tables of one row each, and must read what the statement is about through its own key or index.
 */

const pgUrl = process.env.TEST_DATABASE_URL

describe('plans made on small tables (postgres)', { skip: !pgUrl && 'PostgreSQL only (TEST_DATABASE_URL not set)' }, () => {
  let store: PostgresTestStore
  /** One connection, so that what it prepared can be explained on it. */
  let one: Database
  let accountId: string
  let agentId: string
  let mandateId: string
  let paymentId: string

  before(async () => {
    store = await openStore('postgres')
    await migrateToLatest(store.db)
    one = openDatabase({ databaseUrl: pgUrl!, postgresSchema: store.postgres.schema, poolSize: 1 })
    const services = createServices({ config: loadConfig({}), db: store.db, clock: systemClock })
    accountId = (await services.accounts.createKey('key-plans', 'write')).account_id
    const ctx = { accountId, requestId: null }
    agentId = (await services.agents.create(ctx, { name: 'key plans' })).id
    mandateId = (await services.mandates.create(ctx, {
      protocol: 'ap2', max_amount: 1000, budget_amount: 10_000, usage: 'multi_use', currency: 'USD',
      expires_at: new Date(Date.now() + 86_400_000).toISOString(), agent_id: agentId,
    })).id
    paymentId = (await services.payments.create(ctx, { mandate_id: mandateId, amount: 100, currency: 'USD', payment_method: 'card' })).id
  })
  after(async () => {
    await one.close()
    await store.close()
  })

  /** The generic plan of the statement `run` prepared on the connection whose text matches `pattern`. */
  const planOf = (run: (connection: Kysely<any>) => Promise<unknown>, pattern: RegExp, args: readonly unknown[]): Promise<string> =>
    one.kysely.connection().execute(async (connection) => {
      await run(connection)
      return preparedPlan(connection, pattern, args)
    })

  test('the mandate hold updates the mandate through its primary key, through no account index', async () => {
    const query = holdStatement(one.kysely, { accountId, mandateId, amount: 100, currency: 'USD', now: new Date().toISOString() })
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

  test('a payment looked up in a transaction is found through its primary key', async () => {
    const plan = await planOf((connection) => connection.transaction().execute((trx) => findPayment(trx, accountId, paymentId)),
      /^select \* from "payments" where "id" = \$1/, [paymentId, accountId])
    assert.match(plan, /Index Scan using payments_pkey on payments/, plan)
    assert.doesNotMatch(plan, /_account_/, plan)
  })

  test('an agent\'s payment is found through its primary key, and its mandate through the mandate\'s', async () => {
    const plan = await planOf((connection) => findPayment(connection, accountId, paymentId, agentId),
      /^select \* from "payments" where "id" = \$1 .*"agent_id"/, [paymentId, accountId, agentId])
    assert.match(plan, /Index Scan using payments_pkey on payments/, plan)
    assert.match(plan, /Index Scan using mandates_pkey on mandates/, plan)
    assert.doesNotMatch(plan, /_account_/, plan)
  })

  test('a filtered count reads its list\'s index: a mandate\'s payments, the mandates of a status', async () => {
    const payments = await planOf((connection) => countPayments(connection, { accountId, mandateId }),
      /count\(\*\).* from "payments"/, [accountId, mandateId])
    assert.match(payments, /payments_account_mandate_created_idx/, payments)
    const mandates = await planOf((connection) => countMandates(connection, { accountId, status: 'consumed', now: new Date().toISOString() }),
      /count\(\*\).* from "mandates"/, [accountId, 'consumed'])
    assert.match(mandates, /mandates_account_status_created_idx/, mandates)
  })
})
