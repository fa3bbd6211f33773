import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { Response } from './response.js'

/**
 * Checks HTTP exchanges against the app's own OpenAPI document, as a validating proxy (Prism) would:
 * the request matches its operation, the status is declared, the body validates against the
 * declared schema, and the headers declared required are present and valid. Used by the tests that
 * drive every operation (test/api/declared-statuses.test.ts, test/api/generated-client.test.ts).
 */

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const
const DOC_ID = 'openapi.json'

/**
 * Operations that speak another protocol than Wishpay's own: their answers carry that protocol's
 * API-Version (ACP 2026-04-17, src/modules/acp/routes.ts), not the document's Wishpay version, except
 * the answers declared with Wishpay's Error schemas (408, 417, 431: given on the connection, before
 * routing). test/api/acp-delegate-payment.test.ts checks the rest of ACP's headers and errors.
 */
export const PROTOCOL_API_VERSIONS: Record<string, string> = { delegatePayment: '2026-04-17' }
const WISHPAY_ERROR_REF = /^#\/components\/schemas\/Error\d{3}$/

export interface Operation {
  /** "POST /wishes/{id}" */
  key: string
  method: string
  path: string
  op: any
}

/** A request and the answer it got (the answer in the one Response shape, without its parsed body). */
export interface Exchange extends Pick<Response, 'status' | 'headers' | 'raw'> {
  method: string
  /** The request path, with or without a query string. */
  url: string
  /** Request body as sent, when one was sent. */
  requestBody?: string | undefined
  requestContentType?: string | undefined
}

function pointer(...parts: string[]): string {
  return `${DOC_ID}#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`
}

export function operationsOf(doc: any): Operation[] {
  const out: Operation[] = []
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      if (item[method]) out.push({ key: `${method.toUpperCase()} ${path}`, method, path, op: item[method] })
    }
  }
  return out
}

export class OpenApiContract {
  readonly operations: Operation[]
  private readonly ajv: Ajv2020
  private readonly validators = new Map<string, ValidateFunction>()

  constructor(readonly doc: any) {
    this.operations = operationsOf(doc)
    this.ajv = addFormats(new Ajv2020({ strict: false, allErrors: true, validateSchema: false }))
    // The app's own format (src/http/validation.ts); any value is accepted here, the server decides.
    this.ajv.addFormat('currency', /^[A-Za-z]{3}$/)
    this.ajv.addSchema(doc, DOC_ID)
  }

  /** The operation a request goes to, by method and path template. */
  find(method: string, url: string): Operation | undefined {
    const path = url.split('?')[0]!
    return this.operations.find((o) => {
      if (o.method !== method.toLowerCase()) return false
      const pattern = new RegExp(`^${o.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`)
      return pattern.test(path)
    })
  }

  /** The $ref'd object a node stands for, or the node itself. */
  resolve(node: any): any {
    let current = node
    while (current && typeof current.$ref === 'string') {
      let target: any = this.doc
      for (const part of current.$ref.replace(/^#\//, '').split('/')) target = target?.[part.replace(/~1/g, '/').replace(/~0/g, '~')]
      current = target
    }
    return current
  }

  private validator(ref: string): ValidateFunction {
    let validate = this.validators.get(ref)
    if (!validate) {
      validate = this.ajv.compile({ $ref: ref })
      this.validators.set(ref, validate)
    }
    return validate
  }

  private validate(ref: string, value: unknown): string | undefined {
    const validate = this.validator(ref)
    if (validate(value)) return undefined
    return this.ajv.errorsText(validate.errors, { dataVar: 'body' })
  }

  /**
   * Everything in this exchange that the document does not allow; empty when it conforms. With
   * `checkRequest`, the request too must conform (a validating proxy forwards only those).
   */
  problems(exchange: Exchange, { checkRequest = false } = {}): string[] {
    const found = this.find(exchange.method, exchange.url)
    if (!found) return [`${exchange.method} ${exchange.url}: no such operation in the document`]
    const { key, method, path, op } = found
    const out: string[] = []
    const where = `${key} -> ${exchange.status}`

    // The request, as a validating proxy checks it before forwarding (only conforming ones are sent).
    const hasBody = exchange.requestBody !== undefined && exchange.requestBody !== ''
    if (checkRequest) {
      if (op.requestBody?.required && !hasBody) out.push(`${key}: the document requires a body, none was sent`)
      if (hasBody) {
        if (!op.requestBody) out.push(`${key}: a body was sent, the document takes none`)
        else {
          let sent: unknown
          try {
            sent = JSON.parse(exchange.requestBody!)
          } catch {
            sent = undefined
            out.push(`${key}: the request body is not JSON`)
          }
          const problem = sent === undefined ? undefined : this.validate(pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema'), sent)
          if (problem) out.push(`${key}: request ${problem}`)
        }
      }
    }

    const response = this.resolve(op.responses?.[String(exchange.status)])
    if (!response) {
      out.push(`${where}: status not declared (declared: ${Object.keys(op.responses ?? {}).join(', ')})`)
      return out
    }
    const protocolVersion = PROTOCOL_API_VERSIONS[op.operationId]
    const wishpayError = WISHPAY_ERROR_REF.test(String(response.content?.['application/json']?.schema?.$ref ?? ''))
    for (const [name, declared] of Object.entries<any>(response.headers ?? {})) {
      const headerObject = this.resolve(declared)
      if (protocolVersion !== undefined && !wishpayError && name === 'API-Version') {
        const sent = exchange.headers['api-version']
        if (sent !== protocolVersion) out.push(`${where}: header API-Version "${String(sent)}", the protocol's is ${protocolVersion}`)
        continue
      }
      const value = exchange.headers[name.toLowerCase()]
      if (value === undefined) {
        if (headerObject.required) out.push(`${where}: required header ${name} is missing`)
        continue
      }
      const text = String(value)
      const schema = headerObject.schema ?? {}
      if (schema.type === 'integer' && !/^\d+$/.test(text)) out.push(`${where}: header ${name} "${text}" is not an integer`)
      if (Array.isArray(schema.enum) && !schema.enum.includes(text)) out.push(`${where}: header ${name} "${text}" is not one of ${schema.enum.join(', ')}`)
      if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern).test(text)) out.push(`${where}: header ${name} "${text}" does not match ${schema.pattern}`)
    }

    const content = response.content as Record<string, unknown> | undefined
    const contentType = String(exchange.headers['content-type'] ?? '')
    if (!content) {
      if (exchange.raw !== '') out.push(`${where}: the document declares no body, got ${exchange.raw.slice(0, 200)}`)
      return out
    }
    if (content['application/json']) {
      if (!/^application\/json\b/.test(contentType)) out.push(`${where}: content-type ${contentType}, the document says application/json`)
      let body: unknown
      try {
        body = JSON.parse(exchange.raw)
      } catch {
        out.push(`${where}: the body is not JSON: ${exchange.raw.slice(0, 200)}`)
        return out
      }
      const problem = this.validate(pointer('paths', path, method, 'responses', String(exchange.status), 'content', 'application/json', 'schema'), body)
      if (problem) out.push(`${where}: ${problem}: ${exchange.raw.slice(0, 300)}`)
    } else if (!Object.keys(content).some((type) => contentType.startsWith(type))) {
      out.push(`${where}: content-type ${contentType} is not one of ${Object.keys(content).join(', ')}`)
    }
    return out
  }
}
