import { hash } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { rememberedQuotes } from '../lib/json-quote.js'

/**
 * A request's idempotency fingerprint: what the request asked, saved with the key's record and compared
 * when the key comes back (http/idempotency.ts). Its text must not change between releases, or a retry
 * after an upgrade would get 422 instead of its replay (test/unit/canonical-json.test.ts holds it).
 */

/** What a fingerprint is taken of: the request's body as validated, and the parts requestTextOf names. */
export type FingerprintedRequest = Pick<FastifyRequest, 'body' | 'bodyText' | 'url' | 'method' | 'ctx'>

/** Member names as JSON writes them, each quoted once: a body's names are its schema's few. */
const quotedKey = rememberedQuotes()

/**
 * JSON with object keys sorted (by UTF-16 code units, as `sort()` compares them), so that member order
 * never changes a fingerprint; a member whose value is undefined is left out, as is `skip` at the top, and
 * an array's undefined element is written as nothing, as `join` writes it. Built in one pass of loops:
 * the entries, filter, comparator, map and join it replaces, with the body's copy without its key, cost
 * about 19,000 instructions a payment (callgrind, docs/performance.md, thirty-first pass). Exported for
 * test/unit/canonical-json.test.ts, which holds it to that earlier form's text.
 */
export function canonicalJson(value: unknown, skip?: string): string | undefined {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ','
      const element = canonicalJson(value[i])
      if (element !== undefined) out += element
    }
    return `${out}]`
  }
  const members = value as Record<string, unknown>
  const keys = Object.keys(members).sort()
  let out = '{'
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    const member = members[key]
    if (member === undefined || key === skip) continue
    if (out.length > 1) out += ','
    out += `${quotedKey(key)}:${canonicalJson(member)}`
  }
  return `${out}}`
}

/** The agent (for an agent key), the method and the path: the fingerprint's subject besides the body. */
function subjectOf(request: Pick<FastifyRequest, 'url' | 'method' | 'ctx'>): string {
  const query = request.url.indexOf('?')
  const path = query === -1 ? request.url : request.url.slice(0, query)
  const agent = request.ctx.agentId === undefined ? '' : `agent ${request.ctx.agentId}\n`
  return `${agent}${request.method} ${path}\n`
}

/**
 * Method, path and the validated body (defaults applied), without the key itself; for an agent key,
 * the agent too, so that an agent never gets the replay of a request another principal of the account
 * made under the same key (it gets 422 idempotency_key_reused). Account keys' fingerprints are unchanged.
 */
export function fingerprintOf(request: Pick<FastifyRequest, 'body' | 'url' | 'method' | 'ctx'>): string {
  const body = request.body ?? {}
  // A body that is not a plain object (validation refuses those) is copied as the rest of it always was.
  const members = typeof body === 'object' && !Array.isArray(body) ? body : { ...(body as object) }
  return hash('sha256', `${subjectOf(request)}${canonicalJson(members, 'idempotency_key')}`, 'hex')
}

/**
 * The request as it arrived, as far as its fingerprint depends on it: the subject and the body's text as
 * received. The validated body is a function of that text alone (the JSON parser, the route's schema with
 * its coercion, defaults and normalisation, and its bodyDefaults, none of which reads anything else), so
 * two requests with the same text have the same fingerprint; two with different texts may still have it
 * (members reordered, a default sent). A request without a body has the text of an empty one.
 */
export function requestTextOf(request: FingerprintedRequest): string {
  return `${subjectOf(request)}${request.bodyText ?? ''}`
}
