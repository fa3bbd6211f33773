import assert from 'node:assert/strict'
import net from 'node:net'
import { test } from 'node:test'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/database.js'
import { isDatabaseUnavailable, isServerError, isUniqueViolation } from '../../src/db/errors.js'

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code })

test('connection failures of either dialect count as the database being unavailable (503)', () => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'EAI_AGAIN', 'ENETUNREACH', '08006', '57P01', '57P03', '53300', 'SQLITE_BUSY', 'SQLITE_FULL']) {
    assert.equal(isDatabaseUnavailable(withCode(code)), true, code)
  }
  for (const message of [
    'Connection terminated unexpectedly', 'Query read timeout', 'timeout exceeded when trying to connect',
    'Client has encountered a connection error and is not queryable', 'timeout expired',
  ]) assert.equal(isDatabaseUnavailable(new Error(message)), true, message)
  assert.equal(isDatabaseUnavailable(new Error('wrapped', { cause: withCode('ECONNREFUSED') })), true)
})

test('client mistakes and bugs are not outages', () => {
  for (const error of [withCode('23505'), withCode('42P01'), new TypeError('x is undefined'), new Error('lease timeout expired'), 'string', null]) {
    assert.equal(isDatabaseUnavailable(error), false, String(error))
  }
  assert.equal(isUniqueViolation(withCode('23505')), true)
  assert.equal(isUniqueViolation(withCode('SQLITE_CONSTRAINT_PRIMARYKEY')), true)
  assert.equal(isUniqueViolation(withCode('SQLITE_BUSY')), false)
})

test('PostgreSQL\'s own error answers are told from the client\'s failures, which leave the outcome unknown', () => {
  const answered = (code: string, severity = 'ERROR') => Object.assign(withCode(code), { severity })
  for (const error of [answered('23505'), answered('40P01'), answered('0A000'), answered('57P01', 'FATAL')]) {
    assert.equal(isServerError(error), true, String(error.code))
  }
  // pg-protocol's answer it could not read is a DatabaseError without a code; sockets have codes of their own.
  for (const error of [Object.assign(new Error('received invalid response: 1'), { name: 'error' }), withCode('23505'), withCode('ECONNRESET'), new Error('Query read timeout'), undefined]) {
    assert.equal(isServerError(error), false, String(error))
  }
})

test('a PostgreSQL server that accepts connections but never answers (frozen) costs a new connection pg\'s connect timeout, which counts as unavailable', async () => {
  // A listener that takes each TCP connection and says nothing, as a stopped (SIGSTOP) server's kernel does.
  const sockets = new Set<net.Socket>()
  const silent = net.createServer((socket) => { sockets.add(socket) })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  const { port } = silent.address() as net.AddressInfo
  const db = openDatabase({ databaseUrl: `postgres://wishpay@127.0.0.1:${port}/wishpay` })
  try {
    // Through the serving pool, as a request's first query on a new connection would go.
    const error: unknown = await sql`select 1`.execute(db.kysely).then(() => undefined, (e: unknown) => e)
    assert.ok(error instanceof Error, 'the query failed')
    // The client's own connect timeout (QuickConnectClient), not pg-pool's longer one, ended it.
    assert.equal(error.message, 'timeout expired')
    assert.equal(isDatabaseUnavailable(error), true, error.message)
  } finally {
    await db.close()
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => silent.close(resolve))
  }
})
