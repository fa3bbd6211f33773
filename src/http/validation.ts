import { Ajv, type ErrorObject, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance, FastifySchema } from 'fastify'
import { normalizeCurrency } from '../lib/currency.js'
import type { FieldError } from '../lib/errors.js'

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

/**
 * Two validators: JSON bodies keep their JSON types (the string "100" is not an amount), while
 * query strings and path parameters are text and are coerced. Neither strips unknown members:
 * they are rejected (removeAdditional: false), so nothing can be mass-assigned.
 */
const common: Options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false, ownProperties: true }
const bodyAjv = addFormats(new Ajv({ ...common, coerceTypes: false }))
const textAjv = addFormats(new Ajv({ ...common, coerceTypes: true }))
// `format: currency`: an ISO 4217 code in any case, checked with the schema so that its error is
// reported together with every other field's.
for (const ajv of [bodyAjv, textAjv]) {
  ajv.addFormat('currency', { type: 'string', validate: (code: string) => normalizeCurrency(code) !== undefined })
  // `x-normalize: uppercase` rewrites the value in place, so that everything after validation (the
  // idempotency fingerprint, the services) sees "USD" whether "usd" or "USD" was sent.
  ajv.addKeyword({
    keyword: 'x-normalize',
    modifying: true,
    schemaType: 'string',
    validate: (mode: string, data: unknown, _schema: unknown, ctx?: { parentData: Record<string | number, unknown>, parentDataProperty: string | number }) => {
      if (mode === 'uppercase' && typeof data === 'string' && ctx) ctx.parentData[ctx.parentDataProperty] = data.toUpperCase()
      return true
    },
  })
}

export function registerValidators(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as FastifySchema))
}

/** "/budget/max" -> "budget.max"; the param names a client sees. */
function pointerToParam(pointer: string): string {
  return pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).join('.')
}

function join(base: string, name: string): string {
  return base ? `${base}.${name}` : name
}

function describe(param: string, error: ErrorObject): string {
  const subject = param || 'Request body'
  const p = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'enum':
      return `${subject} must be one of: ${(p.allowedValues as unknown[]).join(', ')}`
    case 'type':
      return `${subject} must be ${p.type === 'integer' ? 'an integer' : `of type ${String(p.type)}`}`
    case 'minLength':
      return p.limit === 1 ? `${subject} must not be empty` : `${subject} must be at least ${String(p.limit)} characters`
    case 'maxLength':
      return `${subject} must be at most ${String(p.limit)} characters`
    case 'maxProperties':
      return `${subject} may have at most ${String(p.limit)} keys`
    case 'format':
      return p.format === 'currency'
        ? `${subject} must be an ISO 4217 currency code`
        : `${subject} must be a valid ${String(p.format)}`
    default:
      return `${subject} ${error.message ?? 'is invalid'}`
  }
}

/**
 * The order field errors are listed in: unknown parameters, then missing ones, then invalid values;
 * within each, the schema's order. A mistyped name is both an unknown parameter and the missing one it
 * was meant to be, and the typo is the thing to fix, so it leads (and names the top-level code and
 * message): `{ max_ammount: 5 }` lists `max_ammount` unknown before `max_amount` missing.
 */
const RANK: Record<string, number> = { parameter_unknown: 0, parameter_missing: 1 }
const rank = (field: FieldError) => RANK[field.code] ?? 2

/**
 * Turns Ajv's errors into the contract's field errors: one per parameter, the most specific first,
 * in RANK order. Union noise (anyOf, if, and the "must be null" branch of nullable members) is dropped
 * when a more precise error exists for the same value.
 */
export function toFieldErrors(validation: ErrorObject[], part: string | undefined): FieldError[] {
  const prefix = part === 'querystring' || part === 'params' || part === 'body' || part === undefined ? '' : `${part}.`
  const byParam = new Map<string, FieldError>()
  // `if` only says that a then/else branch failed; the branch's own errors name the parameters.
  const meaningful = validation.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'propertyNames' && e.keyword !== 'if')
  for (const error of meaningful) {
    const base = pointerToParam(error.instancePath)
    const p = error.params as Record<string, unknown>
    let field: FieldError
    if (error.keyword === 'required') {
      const param = prefix + join(base, String(p.missingProperty))
      field = { param, code: 'parameter_missing', message: `${param} is required` }
    } else if (error.keyword === 'additionalProperties') {
      const param = prefix + join(base, String(p.additionalProperty))
      field = { param, code: 'parameter_unknown', message: `Received unknown parameter: ${param}` }
    } else if (error.propertyName !== undefined) {
      // A key of a map (metadata) broke a rule: name the key, describe the rule for keys.
      const param = prefix + join(base, error.propertyName)
      field = { param, code: 'parameter_invalid', message: describe(`${prefix + base} keys`, error) }
    } else {
      const isNullBranch = error.keyword === 'type' && p.type === 'null'
      const param = prefix + base
      if (isNullBranch && meaningful.some((o) => o !== error && pointerToParam(o.instancePath).startsWith(base))) continue
      field = { param, code: 'parameter_invalid', message: describe(param, error) }
    }
    if (!byParam.has(field.param)) byParam.set(field.param, field)
  }
  // Array.prototype.sort is stable: the schema's order stays within each rank.
  const fields = [...byParam.values()].sort((a, b) => rank(a) - rank(b))
  return fields.length > 0 ? fields : [{ param: prefix, code: 'parameter_invalid', message: 'Request is invalid' }]
}
