import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { test } from 'node:test'
import pino from 'pino'
import { isoTime, loggerOptions, scrubLine } from '../../src/logger.js'

const KEY = 'sk_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh'
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

/** A logger built exactly as the server builds one, at trace, writing into an array. */
function capture(): { logger: pino.Logger, lines: string[] } {
  const lines: string[] = []
  const stream = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done() } })
  return { logger: pino(loggerOptions({ logLevel: 'trace' }), stream), lines }
}

/** What Node's HTTP parser hands to `clientError`: the raw request, Authorization header and all. */
function parserError(): Error {
  const error = Object.assign(new Error('Parse Error: Header overflow'), {
    code: 'HPE_HEADER_OVERFLOW',
    reason: 'Header overflow',
    bytesParsed: 70_000,
    rawPacket: Buffer.from(`GET /wishes HTTP/1.1\r\nAuthorization: Bearer ${KEY}\r\n`),
  })
  return error
}

test('an error\'s raw packet, binary members and request objects are not logged; the rest is', () => {
  const { logger, lines } = capture()
  const cause = Object.assign(new Error('inner'), { data: new Uint8Array(Buffer.from(KEY)), code: 'INNER' })
  const error = Object.assign(parserError(), { cause, errors: [cause], headers: { authorization: `Bearer ${KEY}` }, response: { body: KEY } })
  logger.trace({ err: error }, 'client error')
  logger.warn({ error }, 'as error')
  assert.equal(lines.length, 2)
  for (const line of lines) {
    assert.ok(!line.includes(KEY), line)
    assert.ok(!line.includes([...Buffer.from(KEY)].join(',')), line)
    assert.ok(!line.includes('rawPacket'), line)
  }
  const logged = JSON.parse(lines[0]!)
  assert.equal(logged.err.code, 'HPE_HEADER_OVERFLOW')
  assert.match(logged.err.message, /^Parse Error: Header overflow/)
  assert.equal(logged.err.bytesParsed, 70_000)
  assert.match(logged.err.stack, /caused by: Error: inner/)
  assert.equal(logged.err.errors[0].code, 'INNER')
  assert.equal(logged.err.errors[0].data, undefined)
  assert.equal(logged.err.headers, undefined)
  assert.equal(logged.err.response, undefined)
})

test('a PostgreSQL detail keeps its column names, not its values', () => {
  const { logger, lines } = capture()
  const hash = 'a'.repeat(64)
  logger.error({ err: Object.assign(new Error('duplicate key value violates unique constraint "api_keys_key_hash_key"'), { code: '23505', detail: `Key (key_hash)=(${hash}) already exists.` }) }, 'failed')
  logger.error({ err: Object.assign(new Error('null value in column "name"'), { code: '23502', detail: `Failing row contains (key_1, ${hash}, null).` }) }, 'failed')
  assert.ok(!lines.join('').includes(hash))
  assert.equal(JSON.parse(lines[0]!).err.detail, 'Key (key_hash)=([redacted]) already exists.')
  assert.equal(JSON.parse(lines[1]!).err.detail, 'Failing row contains ([redacted]).')
})

test('secret-shaped text and Buffers anywhere in a line are replaced before it is written', () => {
  const { logger, lines } = capture()
  logger.info({ note: `Bearer ${KEY}`, nested: { deep: { value: SECRET, bytes: Buffer.from(KEY) } }, read: `rk_${KEY.slice(3)}` }, `message with ${KEY}`)
  logger.info({ authorization: `Bearer ${KEY}`, req: { headers: { authorization: `Bearer ${KEY}`, cookie: 'session=1' } } }, 'headers')
  const all = lines.join('')
  for (const needle of [KEY, SECRET, KEY.slice(3), [...Buffer.from(KEY)].join(','), 'session=1']) assert.ok(!all.includes(needle), `${needle} in ${all}`)
  const first = JSON.parse(lines[0]!)
  assert.equal(first.note, 'Bearer [redacted]')
  assert.equal(first.nested.deep.value, '[redacted]')
  assert.equal(first.nested.deep.bytes, '[redacted bytes]')
  assert.equal(first.msg, 'message with [redacted]')
})

test('agent keys (ak_) are scrubbed as sk_ and rk_ keys are', () => {
  const agentKey = `ak_${KEY.slice(3)}`
  assert.equal(scrubLine(`{"msg":"Bearer ${agentKey}"}`), '{"msg":"Bearer [redacted]"}')
  assert.equal(scrubLine('{"msg":"break_questions_about_everything_here"}'), '{"msg":"break_questions_about_everything_here"}')
})

test('ordinary lines pass unchanged', () => {
  const line = '{"level":30,"request_id":"req_01m84nbkkafqm47q6dy2kp7r6a","route":"/wishes/:id","task":"task_abc","msg":"request"}\n'
  assert.equal(scrubLine(line), line)
  assert.equal(scrubLine('{"msg":"ask_questions_about_everything_here"}'), '{"msg":"ask_questions_about_everything_here"}')
})

test('isoTime writes what pino.stdTimeFunctions.isoTime writes, in the same millisecond and after it', async () => {
  const first = isoTime()
  assert.match(first, /^,"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"$/)
  const pinoTime = pino.stdTimeFunctions.isoTime()
  // A millisecond may pass between the two calls: then pino's is the later one.
  assert.ok(first === pinoTime || first < pinoTime, `${first} vs ${pinoTime}`)
  const before = isoTime()
  const at = Date.now()
  while (Date.now() === at) { /* into the next millisecond */ }
  const later = isoTime()
  assert.notEqual(later, before)
  assert.equal(isoTime() <= pino.stdTimeFunctions.isoTime(), true)
})
