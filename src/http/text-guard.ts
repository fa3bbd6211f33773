import type { FastifyInstance, FastifyRequest } from 'fastify'
import { errors, type FieldError } from '../lib/errors.js'

/**
 * Rules for the text a client sends that no route schema states, checked in one place before schema
 * validation and before anything reaches a service or the database:
 *
 * - No NUL character (U+0000, `%00` in a URL, `\u0000` in JSON) in any path parameter, query-string
 *   name or value, or JSON body string or object key, at any depth. PostgreSQL cannot store it in
 *   text and fails the statement; SQLite would store it. Refused alike on both stores.
 * - No lone UTF-16 surrogate (`\ud800` in JSON) in the same places: it is not Unicode text, each
 *   driver would store it differently (one or three U+FFFD), and the object read back would differ
 *   from the one created.
 * - An integer in the path or the query string (a schema property of type `integer`) is written in
 *   plain decimal digits with an optional leading `-`, no leading zeros, and no more than 15 digits:
 *   `25`, never `2.5e1`, `25.0`, `+25`, ` 25`, `0x19`, `025` or `Infinity`. The query-string
 *   validator coerces text to numbers (Ajv `coerceTypes`) and would accept all of those; the range
 *   is the schema's `minimum` / `maximum`, checked by the validator afterwards.
 *
 * Each broken rule is a 400 `parameter_invalid` naming the parameter, in the usual envelope.
 */

/** Stops a body full of NULs from producing an answer as large as the body. */
const MAX_REPORTED = 50
/** 15 digits stay below 2^53, so Number() of the text is the exact integer that was written. */
const PLAIN_INTEGER = /^(?:0|-?[1-9][0-9]{0,14})$/

type Part = 'params' | 'querystring'
interface PartSchema { properties?: Record<string, { type?: unknown, minimum?: unknown, maximum?: unknown }> }

/** The integer-typed members of a route's params or querystring schema, with their message. */
const integerMembers = new WeakMap<object, Map<string, string>>()
/** A part without a schema (most routes' query string) has none: one shared empty map, not one a request. */
const NONE: ReadonlyMap<string, string> = new Map()

function integersOf(schema: unknown): ReadonlyMap<string, string> {
  if (schema === null || typeof schema !== 'object') return NONE
  let found = integerMembers.get(schema)
  if (found) return found
  found = new Map()
  for (const [name, member] of Object.entries((schema as PartSchema).properties ?? {})) {
    if (member?.type !== 'integer') continue
    const range = typeof member.minimum === 'number' && typeof member.maximum === 'number'
      ? ` from ${member.minimum} to ${member.maximum}`
      : ''
    found.set(name, `${name} must be an integer${range} written in plain decimal digits (no exponent, decimal point, plus sign, spaces or leading zeros)`)
  }
  integerMembers.set(schema, found)
  return found
}

const LONE_SURROGATE = /\p{Surrogate}/u
/** Why a text is refused, or undefined: `subject` names what holds it. */
function textProblem(text: string, subject: string): string | undefined {
  if (text.includes('\u0000')) return `${subject} must not contain the NUL character (U+0000)`
  if (LONE_SURROGATE.test(text)) return `${subject} must be well-formed Unicode (it holds a lone surrogate, such as \\ud800)`
  return undefined
}

/** Path parameters and query-string members: one level of names, each a string or strings. */
function checkText(part: Part, values: unknown, schema: unknown, out: FieldError[]): void {
  if (values === null || typeof values !== 'object') return
  const integers = integersOf(schema)
  for (const [name, value] of Object.entries(values)) {
    const badName = textProblem(name, `${part === 'params' ? 'Path' : 'Query'} parameter names`)
    if (badName !== undefined) {
      out.push({ param: name, code: 'parameter_invalid', message: badName })
      continue
    }
    const texts = Array.isArray(value) ? value : [value]
    const badValue = texts.map((text) => (typeof text === 'string' ? textProblem(text, name) : undefined)).find((m) => m !== undefined)
    if (badValue !== undefined) {
      out.push({ param: name, code: 'parameter_invalid', message: badValue })
      continue
    }
    // Repeated members (`?offset=1&offset=2`) are left to the schema, which wants one value.
    const message = integers.get(name)
    if (message !== undefined && typeof value === 'string' && !PLAIN_INTEGER.test(value)) {
      out.push({ param: name, code: 'parameter_invalid', message })
    }
  }
}

/** Every string and key of a JSON body, walked without recursion (bodies may nest deeply). */
function checkBody(body: unknown, out: FieldError[]): void {
  const stack: Array<{ value: unknown, path: string }> = [{ value: body, path: '' }]
  const join = (base: string, name: string) => (base ? `${base}.${name}` : name)
  while (stack.length > 0 && out.length < MAX_REPORTED) {
    const { value, path } = stack.pop()!
    if (typeof value === 'string') {
      const problem = textProblem(value, path || 'Request body')
      if (problem !== undefined) out.push({ param: path, code: 'parameter_invalid', message: problem })
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: join(path, String(i)) })
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value)
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, member] = entries[i]!
        const param = join(path, key)
        const problem = textProblem(key, `${path || 'Request body'} keys`)
        if (problem !== undefined) out.push({ param, code: 'parameter_invalid', message: problem })
        else stack.push({ value: member, path: param })
      }
    }
  }
}

export function textErrors(request: FastifyRequest): FieldError[] {
  const schema = request.routeOptions.schema
  const out: FieldError[] = []
  checkText('params', request.params, schema?.params, out)
  checkText('querystring', request.query, schema?.querystring, out)
  checkBody(request.body, out)
  return out.slice(0, MAX_REPORTED)
}

/** The guard as a preValidation hook on every route (unknown routes keep their 404). */
export function registerTextGuard(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.is404) return done()
    const found = textErrors(request)
    done(found.length > 0 ? errors.validation(found) : undefined)
  })
}
