import assert from 'node:assert/strict'
import type { Response } from './app.js'

/**
 * Assertions on API answers shared by the test suites: the headers every response carries and the
 * error envelope of contract section 2, plus the list order of section 1.
 */

export const API_VERSION = '2026-11-01.beta'
/** A Request-Id as the app makes them: `req_` and a lowercase ULID. */
export const REQUEST_ID = /^req_[0-9a-z]{10,}$/
/** A timestamp in the contract's format: UTC with milliseconds. */
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The Request-Id header of a response, which must be present and a req_ id. */
export function requestIdOf(res: Response): string {
  const id = res.headers['request-id']
  assert.equal(typeof id, 'string', 'Request-Id header present')
  assert.match(id as string, REQUEST_ID)
  return id as string
}

/** Request-Id and API-Version are on the response; on an error the body's request_id is the header. */
export function assertEnvelopeHeaders(res: Response): string {
  const id = requestIdOf(res)
  assert.equal(res.headers['api-version'], API_VERSION)
  if (res.status >= 400) assert.equal(res.body?.error?.request_id, id)
  return id
}

/** An error answer in the envelope of contract section 2 with exactly this status, type, code (and param); returns the error. */
export function assertError(res: Response, status: number, type: string, code: string, param?: string): any {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.raw}`)
  assert.equal(res.headers['api-version'], API_VERSION)
  const error = res.body?.error
  assert.ok(error, `error envelope: ${res.raw}`)
  assert.equal(error.type, type, res.raw)
  assert.equal(error.code, code, res.raw)
  assert.equal(typeof error.message, 'string')
  assert.ok(error.message.length > 0)
  assert.equal(error.request_id, requestIdOf(res))
  if (param !== undefined) assert.equal(error.param, param, res.raw)
  return error
}

/** A 400 where exactly one parameter failed: `param` and `errors` both name it. */
export function assertInvalid(res: Response, param: string, code = 'parameter_invalid'): void {
  const error = assertError(res, 400, 'invalid_request_error', code, param)
  assert.ok(Array.isArray(error.errors), 'errors[] present')
  assert.equal(error.errors.length, 1, JSON.stringify(error.errors))
  assert.equal(error.errors[0].param, param)
  assert.equal(error.errors[0].code, code)
  assert.equal(typeof error.errors[0].message, 'string')
}

export function assertNotFound(res: Response): void {
  assertError(res, 404, 'invalid_request_error', 'resource_missing')
}

/** A 422 payment_error with this code (and param). */
export function assertPaymentError(res: Response, code: string, param?: string): void {
  assertError(res, 422, 'payment_error', code, param)
}

/** The order of contract section 1: created_at desc, then id desc. */
export function newestFirst<T extends { id: string, created_at: string }>(items: T[]): T[] {
  return [...items].sort((a, b) => {
    if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1
    return a.id < b.id ? 1 : a.id > b.id ? -1 : 0
  })
}

/** The ids of a list's items, in order. */
/** Query strings every list refuses (contract section 1): [query, param, code]. */
export const PAGING_QUERY_CASES: Array<[string, string, string]> = [
  ['?limit=0', 'limit', 'parameter_invalid'],
  ['?limit=101', 'limit', 'parameter_invalid'],
  ['?limit=1.5', 'limit', 'parameter_invalid'],
  ['?limit=abc', 'limit', 'parameter_invalid'],
  ['?limit=-1', 'limit', 'parameter_invalid'],
  ['?offset=-1', 'offset', 'parameter_invalid'],
  ['?offset=1.5', 'offset', 'parameter_invalid'],
  ['?offset=abc', 'offset', 'parameter_invalid'],
  ['?colour=red', 'colour', 'parameter_unknown'],
  ['?account_id=acct_x', 'account_id', 'parameter_unknown'],
]

export const ids = (items: Array<{ id: string }>) => items.map((item) => item.id)
