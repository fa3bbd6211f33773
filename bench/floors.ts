import { randomUUID } from 'node:crypto'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import type { Seed } from './seed.js'
import type { TestStore } from '../test/helpers/stores.js'

export interface FloorResult {
  requestsPerSecond: number
  operations: number
}

const PAYMENT_SQL = {
  idempotency: `insert into idempotency_keys (account_id, idempotency_key, fingerprint, response_status, response_body, created_at, expires_at)
    values ($1, $2, 'fingerprint', 201, '{"data":{}}', $3, $4)`,
  hold: `update mandates set amount_used = amount_used + $1, uses_count = uses_count + 1, updated_at = $2
    where id = $3 and account_id = $4 and status = 'active' and expires_at > $2 and (not_before is null or not_before <= $2)
      and (usage = 'multi_use' or uses_count = 0) and currency = 'USD' and max_amount >= $1 and amount_used + $1 <= budget_amount
    returning id`,
  payment: `insert into payments (id, account_id, mandate_id, wish_id, amount, currency, status, protocol_type, payment_method, amount_refunded, failure_code, failure_message, metadata, created_at, updated_at)
    values ($1, $2, $3, null, $4, 'USD', 'succeeded', 'ap2', 'card', 0, null, null, '{}', $5, $5)`,
  event: `insert into events (id, account_id, type, object_id, data, request_id, created_at)
    values ($1, $2, 'payment.created', $3, '{"object":{}}', null, $4)`,
}

/** SQLite has no $n parameters: `?` in order of appearance, and the argument order to bind them. */
function toSqlite(text: string): { text: string, order: number[] } {
  const order: number[] = []
  return { text: text.replace(/\$(\d+)/g, (_m, n: string) => { order.push(Number(n) - 1); return '?' }), order }
}

/**
 * The database work of one payment without HTTP: the idempotency insert, the conditional mandate
 * update, the payment insert and the event insert in one transaction. SQLite: a synchronous loop in
 * this process with the service's pragmas. PostgreSQL: `concurrency` callers sharing a pg pool of the
 * service's size.
 */
export async function paymentFloor(store: TestStore, seed: Seed, durationMs: number, concurrency: number): Promise<FloorResult> {
  const deadline = Date.now() + durationMs
  let operations = 0
  if (store.name === 'sqlite') {
    const connection = new SQLite(store.sqlitePath)
    connection.pragma('journal_mode = WAL')
    connection.pragma('synchronous = FULL')
    const prepare = (text: string) => {
      const { text: sqliteText, order } = toSqlite(text)
      const statement = connection.prepare(sqliteText)
      return (...args: unknown[]) => {
        const bound = order.map((i) => args[i])
        return statement.reader ? statement.all(...bound) : (statement.run(...bound), [])
      }
    }
    const idempotency = prepare(PAYMENT_SQL.idempotency)
    const hold = prepare(PAYMENT_SQL.hold)
    const payment = prepare(PAYMENT_SQL.payment)
    const event = prepare(PAYMENT_SQL.event)
    const pay = connection.transaction(() => {
      const now = new Date().toISOString()
      const id = randomUUID()
      idempotency(seed.accountId, id, now, now)
      if (hold(1, now, seed.mandateId, seed.accountId).length !== 1) throw new Error('hold refused')
      payment(`pay_${id}`, seed.accountId, seed.mandateId, 1, now)
      event(`evt_${id}`, seed.accountId, `pay_${id}`, now)
    })
    const started = Date.now()
    while (Date.now() < deadline) {
      pay.immediate()
      operations++
    }
    connection.close()
    return { operations, requestsPerSecond: operations / ((Date.now() - started) / 1000) }
  }

  const pool = new pg.Pool({ connectionString: store.postgres.url, max: 10, options: `-c search_path=${store.postgres.schema}` })
  const started = Date.now()
  const worker = async () => {
    while (Date.now() < deadline) {
      const client = await pool.connect()
      try {
        const now = new Date().toISOString()
        const id = randomUUID()
        await client.query('begin')
        await client.query(PAYMENT_SQL.idempotency, [seed.accountId, id, now, now])
        const held = await client.query(PAYMENT_SQL.hold, [1, now, seed.mandateId, seed.accountId])
        if (held.rowCount !== 1) throw new Error('hold refused')
        await client.query(PAYMENT_SQL.payment, [`pay_${id}`, seed.accountId, seed.mandateId, 1, now])
        await client.query(PAYMENT_SQL.event, [`evt_${id}`, seed.accountId, `pay_${id}`, now])
        await client.query('commit')
        operations++
      } catch (error) {
        await client.query('rollback')
        throw error
      } finally {
        client.release()
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  await pool.end()
  return { operations, requestsPerSecond: operations / ((Date.now() - started) / 1000) }
}
