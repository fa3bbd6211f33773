/**
 * The second floor of `GET /payments/:id`: the hello-world (hello-server.ts) plus the one read the service
 * makes for it, made as the service makes it, and nothing else: no authentication, validation, response
 * schema, log line or hook but the turn budget. It tells how much of the distance between the service and
 * the hello-world is the database's read and how much is the service's own work per request
 * (docs/performance.md, seventeenth pass).
 *
 * The read is the service's: on PostgreSQL (LOOKUP_DATABASE_URL) the payment by account and id through a
 * node-pg pool of the service's size, batched as db/batched-lookup.ts batches it (the keys of the
 * requests of a turn in one named prepared statement, one batch on its way at a time, rows as rows); on
 * SQLite (LOOKUP_SQLITE_PATH) a prepared statement on a read-only connection to the service's file, in
 * one read transaction a turn (db/turn-snapshot.ts). The service's turn budget (http/turn-budget.ts)
 * starts the requests, since it decides how many keys a turn's query carries. LOOKUP_ACCOUNT_ID names the
 * account, as the service takes it from the API key. Not copied: the service's int8 parser (`amount`
 * comes back as text), its rows (node-pg's own objects here, not the array rows db/pg-rows.ts makes
 * objects of, nor the compiled copy without `i`), its per-key retry of a failed batch and its chunks of 64
 * keys (64 connections never fill more than one).
 */
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import pg from 'pg'
import { registerTurnBudget } from '../src/http/turn-budget.js'

const accountId = process.env.LOOKUP_ACCOUNT_ID ?? ''
const POOL_SIZE = 10
const MANY = `select q.i, p.* from unnest($1::text[], $2::text[]) with ordinality as q(account_id, id, i)
  cross join lateral (select * from payments where payments.account_id = q.account_id and payments.id = q.id limit 1) p`

interface Waiting { id: string, resolve(row: unknown): void, reject(error: unknown): void }

/** PostgreSQL: what a turn asks goes as one query once the batch before it is answered. */
function batchedReader(url: string): (id: string) => Promise<unknown> {
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE })
  // An idle client the server dropped is replaced by the pool; without a listener it would end the process.
  pool.on('error', () => {})
  let waiting: Waiting[] = []
  let scheduled = false
  let inFlight = false
  const flush = (): void => {
    scheduled = false
    const batch = waiting
    waiting = []
    inFlight = true
    const values = [batch.map(() => accountId), batch.map((w) => w.id)]
    pool.query({ name: 'payments by key', text: MANY, values }).then((result) => {
      const rows: unknown[] = batch.map(() => undefined)
      // i counts from 1 (with ordinality), a bigint that node-pg reads as text here.
      for (const { i, ...row } of result.rows as Array<{ i: string }>) rows[Number(i) - 1] = row
      batch.forEach((w, i) => w.resolve(rows[i]))
    }, (error: unknown) => { for (const w of batch) w.reject(error) }).finally(() => {
      inFlight = false
      if (waiting.length > 0 && !scheduled) {
        scheduled = true
        setImmediate(flush)
      }
    })
  }
  return (id) => new Promise((resolve, reject) => {
    waiting.push({ id, resolve, reject })
    if (!scheduled && !inFlight) {
      scheduled = true
      setImmediate(flush)
    }
  })
}

/**
 * SQLite: a read on a connection of its own, the reads of a turn in one read transaction, as the
 * service's reader does them (db/turn-snapshot.ts): two fcntl() calls a turn instead of two a read.
 */
function sqliteReader(file: string): (id: string) => unknown {
  const connection = new Database(file, { readonly: true })
  const statement = connection.prepare('select * from payments where account_id = ? and id = ?')
  const begin = connection.prepare('BEGIN')
  const commit = connection.prepare('COMMIT')
  const endOfTurn = () => { commit.run() }
  return (id) => {
    if (!connection.inTransaction) {
      begin.run()
      setImmediate(endOfTurn)
    }
    return statement.get(accountId, id)
  }
}

const read = process.env.LOOKUP_DATABASE_URL
  ? batchedReader(process.env.LOOKUP_DATABASE_URL)
  : sqliteReader(process.env.LOOKUP_SQLITE_PATH ?? '')

const app = Fastify({ logger: false })
registerTurnBudget(app)
app.get<{ Params: { id: string } }>('/payments/:id', async (request, reply) => {
  const row = await read(request.params.id)
  if (row === undefined) return reply.code(404).send({ error: 'not found' })
  return { data: row }
})
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
process.stdout.write(`${JSON.stringify({ msg: 'lookup listening', address })}\n`)
process.once('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
