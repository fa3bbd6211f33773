import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { AppError, errors } from '../../src/lib/errors.js'
import { AcpError, acpErrors } from '../../src/modules/acp/errors.js'
import { ERROR_STATUSES, FIELD_ERROR_CODES, PAYMENT_ERROR_CODES } from '../../src/http/schemas.js'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { type Operation, operationsOf } from '../helpers/openapi-contract.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Static checks of the error catalogue (ERROR_STATUSES in src/http/schemas.ts), from which every
 * route's error responses are made:
 * - every error the code can make (the factories of src/lib/errors.ts, `new AppError` elsewhere, the
 *   payment codes of the services) has its status, type and code in the catalogue;
 * - every status an operation can reach is declared on it: what its handler can throw (followed
 *   through the services with the TypeScript checker), and what the plugins that act on it can.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const SRC = path.join(ROOT, 'src')
const rel = (file: string) => path.relative(ROOT, file).split(path.sep).join('/')

/** Factories whose error no operation answers. */
const NOT_AN_OPERATION = new Set([
  // The not-found handler: a request that matched no route.
  'routeNotFound',
])

const BODY_METHODS = new Set(['post', 'put', 'delete'])
const authenticated = (doc: any) => (o: Operation) => (o.op.security ?? doc.security).length > 0

/** The plugins and hooks that answer errors on the routes they act on, and which those are. */
const PLUGINS: Record<string, (doc: any) => (o: Operation) => boolean> = {
  'src/http/auth.ts': authenticated,
  'src/http/rate-limit.ts': authenticated,
  'src/http/idempotency.ts': () => (o) => o.method === 'post',
  // The idempotency plugin's store: 409 idempotency_key_in_use on the same routes.
  'src/modules/idempotency/store.ts': () => (o) => o.method === 'post',
  'src/http/draining.ts': () => () => true,
  'src/http/client-errors.ts': () => () => true,
  'src/http/text-guard.ts': () => () => true,
  'src/http/json-parser.ts': () => (o) => BODY_METHODS.has(o.method),
  'src/http/error-handler.ts': () => () => true,
}
/** Factories that a plugin answers only on some of the routes it acts on. */
const ONLY_WHERE: Record<string, (o: Operation) => boolean> = {
  // A read key is refused on writes only.
  insufficientScope: (o) => o.method !== 'get',
  // The media type and the size are checked only where a body is read (not on GET).
  unsupportedMediaType: (o) => BODY_METHODS.has(o.method),
  payloadTooLarge: (o) => BODY_METHODS.has(o.method),
  // The router's limit on the length of a path parameter.
  uriTooLong: (o) => o.path.includes('{'),
}
/**
 * Operations that answer ACP's flat errors (src/modules/acp/routes.ts, src/http/acp-errors.ts): besides
 * Wishpay's errors that reach them (rendered flat, under their status), every ACP error the factories
 * of src/modules/acp/errors.ts make must be declared on them.
 */
const ACP_OPERATIONS = new Set(['delegatePayment'])

/** Every status an ACP factory makes, called with placeholder arguments (a status argument both ways). */
function acpStatusesOf(factory: (...args: any[]) => unknown): Set<number> {
  const out = new Set<number>()
  for (const args of [[], ['p'], ['m', '$.p', 422], ['c', 'm', '$.p', 422]]) {
    try {
      const made = factory(...args)
      if (made instanceof AcpError && Number.isInteger(made.status)) out.add(made.status)
    } catch {
      // the next placeholders
    }
  }
  if (out.size === 0) throw new Error(`cannot call the ACP factory ${factory.name}`)
  return out
}

/** Files that mention factories without answering with them. */
const NOT_ANSWERING = new Set(['src/lib/errors.ts', 'src/http/schemas.ts'])

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) return sourceFiles(full)
    return e.name.endsWith('.ts') ? [full] : []
  })
}

/** The error a factory makes, called with placeholder arguments. */
function sampleOf(factory: (...args: any[]) => unknown): AppError {
  const attempts: unknown[][] = [['p', 'a message', 'p'], [[{ param: 'p', code: 'parameter_invalid', message: 'm' }]], [1, 1, 1], []]
  for (const args of attempts) {
    try {
      const made = factory(...args)
      if (made instanceof AppError) return made
    } catch {
      // the next placeholders
    }
  }
  throw new Error(`cannot call the factory ${factory.name}`)
}

function inCatalogue(status: number, type: string, code: string | undefined): string | undefined {
  const entry = ERROR_STATUSES[status]
  if (!entry) return `status ${status} is not in ERROR_STATUSES`
  if (!entry.types.includes(type as never)) return `type ${type} is not among ${status}'s`
  if (code !== undefined && !entry.codes.includes(code)) return `code ${code} is not among ${status}'s`
  return undefined
}

interface Found {
  /** Factories of `errors` referenced. */
  factories: Set<string>
  /** `new AppError({ status, type, code })` with literal members. */
  constructed: Array<{ status: number, type: string, code: string, where: string }>
  /** The files of everything followed. */
  files: Set<string>
}

/** Follows a node's references, through src/ only, collecting the errors it can make. */
function reachable(checker: ts.TypeChecker, errorsSymbol: ts.Symbol, appErrorSymbol: ts.Symbol, entries: ts.Node[]): Found {
  const found: Found = { factories: new Set(), constructed: [], files: new Set() }
  const visited = new Set<ts.Node>()
  const resolve = (symbol: ts.Symbol | undefined) => (symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol)

  const follow = (declaration: ts.Declaration) => {
    if (!path.resolve(declaration.getSourceFile().fileName).startsWith(SRC + path.sep)) return
    let target: ts.Node | undefined
    if (ts.isFunctionDeclaration(declaration) || ts.isMethodDeclaration(declaration) || ts.isClassDeclaration(declaration)
      || ts.isArrowFunction(declaration) || ts.isFunctionExpression(declaration)) target = declaration
    else if ((ts.isVariableDeclaration(declaration) || ts.isPropertyAssignment(declaration)) && declaration.initializer) target = declaration.initializer
    else if (ts.isShorthandPropertyAssignment(declaration)) {
      for (const d of resolve(checker.getShorthandAssignmentValueSymbol(declaration))?.declarations ?? []) follow(d)
    }
    if (target && !visited.has(target)) {
      visited.add(target)
      found.files.add(rel(declaration.getSourceFile().fileName))
      visit(target)
    }
  }

  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node) && resolve(checker.getSymbolAtLocation(node.expression)) === errorsSymbol) {
      // The factory itself is known by its name; its arguments are siblings of this node.
      found.factories.add(node.name.text)
      return
    } else if (ts.isNewExpression(node) && resolve(checker.getSymbolAtLocation(node.expression)) === appErrorSymbol) {
      const init = node.arguments?.[0]
      const literal: Record<string, string | number> = {}
      if (init && ts.isObjectLiteralExpression(init)) {
        for (const p of init.properties) {
          if (!ts.isPropertyAssignment(p) || !ts.isIdentifier(p.name)) continue
          if (ts.isNumericLiteral(p.initializer)) literal[p.name.text] = Number(p.initializer.text)
          else if (ts.isStringLiteral(p.initializer)) literal[p.name.text] = p.initializer.text
        }
      }
      const where = `${rel(node.getSourceFile().fileName)}:${node.getSourceFile().getLineAndCharacterOfPosition(node.getStart()).line + 1}`
      found.constructed.push({ status: literal.status as number, type: literal.type as string, code: literal.code as string, where })
    } else if (ts.isIdentifier(node)) {
      const symbol = resolve(checker.getSymbolAtLocation(node))
      if (symbol && symbol !== errorsSymbol && symbol !== appErrorSymbol) for (const d of symbol.declarations ?? []) follow(d)
    }
    ts.forEachChild(node, visit)
  }
  for (const entry of entries) {
    found.files.add(rel(entry.getSourceFile().fileName))
    visit(entry)
  }
  return found
}

interface Route {
  key: string
  /** The handler and the route options but for the schema: what runs for this route alone. */
  entries: ts.Node[]
  where: string
}

/** Every `x.get('/path', options, handler)` (and post, put, delete, patch) in src/. */
function routesOf(program: ts.Program): Route[] {
  const routes: Route[] = []
  const checker = program.getTypeChecker()
  /** A route's path: a string literal, or a constant (const X = '/path', imported or not) that holds one. */
  const pathOf = (node: ts.Node): string | undefined => {
    if (ts.isStringLiteral(node)) return node.text
    if (!ts.isIdentifier(node)) return undefined
    let symbol = checker.getSymbolAtLocation(node)
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol)
    const declaration = symbol?.valueDeclaration
    return declaration && ts.isVariableDeclaration(declaration) && declaration.initializer && ts.isStringLiteral(declaration.initializer)
      ? declaration.initializer.text : undefined
  }
  for (const file of program.getSourceFiles()) {
    if (!path.resolve(file.fileName).startsWith(SRC + path.sep)) continue
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)
        && ['get', 'post', 'put', 'delete', 'patch'].includes(node.expression.name.text)
        && node.arguments.length >= 2 && pathOf(node.arguments[0]!)?.startsWith('/')) {
        const url = pathOf(node.arguments[0]!)!.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
        const entries: ts.Node[] = [node.arguments[node.arguments.length - 1]!]
        const options = node.arguments.length > 2 ? node.arguments[1]! : undefined
        if (options && ts.isObjectLiteralExpression(options)) {
          for (const p of options.properties) if (!(p.name && ts.isIdentifier(p.name) && p.name.text === 'schema')) entries.push(p)
        }
        routes.push({ key: `${node.expression.name.text.toUpperCase()} ${url}`, entries, where: `${rel(file.fileName)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}` })
      }
      ts.forEachChild(node, visit)
    }
    visit(file)
  }
  return routes
}

describe('error catalogue', () => {
  let t: TestApp
  let doc: any
  let program: ts.Program
  let checker: ts.TypeChecker
  let errorsSymbol: ts.Symbol
  let appErrorSymbol: ts.Symbol
  const statusOf = new Map<string, AppError>()

  before(async () => {
    t = await startTestApp(storeKinds()[0]!)
    doc = (await t.inject({ method: 'GET', url: '/openapi.json' })).body
    for (const [name, factory] of Object.entries(errors)) statusOf.set(name, sampleOf(factory as never))

    program = ts.createProgram(sourceFiles(SRC), {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ['node'],
    })
    checker = program.getTypeChecker()
    const errorsFile = program.getSourceFile(path.join(SRC, 'lib/errors.ts'))!
    const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(errorsFile)!)
    errorsSymbol = exports.find((s) => s.name === 'errors')!
    appErrorSymbol = exports.find((s) => s.name === 'AppError')!
    assert.ok(errorsSymbol && appErrorSymbol)
  })
  after(async () => { await t.close() })

  test('every factory of src/lib/errors.ts makes an error whose status, type and code are in the catalogue', () => {
    const problems: string[] = []
    for (const [name, error] of statusOf) {
      if (NOT_AN_OPERATION.has(name)) continue
      // payment() takes its code from the caller: those are checked below.
      const code = error.code === 'p' ? undefined : error.code
      const problem = inCatalogue(error.status, error.type, code)
      if (problem) problems.push(`errors.${name}: ${problem}`)
      for (const field of error.errors ?? []) {
        if (!FIELD_ERROR_CODES.includes(field.code as never)) problems.push(`errors.${name}: field error code ${field.code}`)
      }
    }
    assert.deepEqual(problems, [])
  })

  test('the payment codes in the catalogue are exactly those the services and rules use', () => {
    const used = new Set<string>()
    for (const file of sourceFiles(path.join(SRC, 'modules'))) {
      const text = fs.readFileSync(file, 'utf8')
      for (const m of text.matchAll(/errors\.payment\(\s*'([a-z0-9_]+)'/g)) used.add(m[1]!)
      if (file.endsWith(path.join('mandates', 'rules.ts'))) for (const m of text.matchAll(/\bcode: '([a-z_]+)'/g)) used.add(m[1]!)
    }
    assert.deepEqual([...used].sort(), [...PAYMENT_ERROR_CODES].sort())
  })

  test('field error codes made by validation are in the catalogue', () => {
    const text = fs.readFileSync(path.join(SRC, 'http/validation.ts'), 'utf8')
    const codes = [...text.matchAll(/code: '([a-z_]+)'/g)].map((m) => m[1]!)
    assert.ok(codes.length >= 3)
    for (const code of codes) assert.ok(FIELD_ERROR_CODES.includes(code as never), code)
  })

  test('every status an operation can reach is declared on it', () => {
    const operations = operationsOf(doc)
    const problems: string[] = []
    const declare = (o: Operation, status: number, why: string) => {
      if (!o.op.responses?.[String(status)]) problems.push(`${o.key} can answer ${status} (${why}) but does not declare it`)
    }

    // What each route's own code can throw.
    const routes = routesOf(program)
    const reachedFiles = new Set<string>()
    const reachedBy = new Map<string, Set<string>>()
    for (const route of routes) {
      const o = operations.find((x) => x.key === route.key)
      if (!o) continue
      const found = reachable(checker, errorsSymbol, appErrorSymbol, route.entries)
      reachedBy.set(route.key, new Set([...found.factories, ...found.constructed.map((c) => `AppError ${c.status}`)]))
      for (const name of found.factories) {
        const error = statusOf.get(name)
        if (!error) problems.push(`${route.where}: errors.${name} is not a factory`)
        else declare(o, error.status, `errors.${name}`)
      }
      for (const made of found.constructed) {
        const problem = inCatalogue(made.status, made.type, made.code)
        if (problem) problems.push(`${made.where}: new AppError: ${problem}`)
        declare(o, made.status, `new AppError at ${made.where}`)
      }
      for (const file of found.files) reachedFiles.add(file)
    }
    assert.ok(routes.filter((r) => operations.some((o) => o.key === r.key)).length === operations.length, 'every operation\'s route was found in src/')

    // What the plugins acting on a route can answer.
    for (const [file, on] of Object.entries(PLUGINS)) {
      const source = program.getSourceFile(path.join(ROOT, file))
      assert.ok(source, `${file} does not exist: update PLUGINS`)
      const found = reachable(checker, errorsSymbol, appErrorSymbol, [source])
      for (const name of found.factories) {
        const error = statusOf.get(name)!
        if (NOT_AN_OPERATION.has(name)) continue
        for (const o of operations.filter(on(doc))) {
          if (ONLY_WHERE[name] && !ONLY_WHERE[name]!(o)) continue
          declare(o, error.status, `errors.${name} (from ${file})`)
        }
      }
      for (const made of found.constructed) problems.push(`${made.where}: new AppError in a plugin: use a factory of src/lib/errors.ts`)
    }

    // ACP's own errors, on the operations that answer them.
    const acpOperations = operations.filter((o) => ACP_OPERATIONS.has(o.op.operationId))
    assert.equal(acpOperations.length, ACP_OPERATIONS.size, 'every ACP operation is in the document')
    for (const [name, factory] of Object.entries(acpErrors)) {
      for (const status of acpStatusesOf(factory as never)) for (const o of acpOperations) declare(o, status, `acpErrors.${name}`)
    }

    // Every file that makes errors is reached from a route, or is a plugin classified above.
    for (const file of sourceFiles(SRC).map(rel)) {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8')
      if (!/\berrors\.\w+\(|new AppError\(/.test(text)) continue
      if (PLUGINS[file] || NOT_ANSWERING.has(file) || reachedFiles.has(file)) continue
      problems.push(`${file} makes errors but is neither a route's nor in PLUGINS: classify it in this test`)
    }
    assert.deepEqual(problems, [])

    // The analysis finds what these routes are known to throw (it does not silently find nothing).
    const known: Record<string, string[]> = {
      'PUT /wishes/{id}': ['resourceMissing', 'invalidStateTransition', 'validation'],
      'POST /mandates/{id}/revoke': ['resourceMissing', 'invalidStateTransition'],
      'POST /mandates': ['payment', 'validation'],
      'POST /payments': ['payment', 'parameterInvalid'],
      'POST /payments/{id}/refunds': ['resourceMissing', 'payment'],
      'GET /events/{id}': ['resourceMissing'],
      'DELETE /webhook_endpoints/{id}': ['resourceMissing'],
      'GET /readyz': ['serviceUnavailable'],
      'GET /metrics': ['AppError 401'],
    }
    for (const [key, names] of Object.entries(known)) {
      for (const name of names) assert.ok(reachedBy.get(key)?.has(name), `${key}: ${name} not found (found ${[...reachedBy.get(key) ?? []].join(', ')})`)
    }
    assert.deepEqual([...reachedBy.get('GET /wishes') ?? []].sort(), ['cursorMissing', 'parameterInvalid'], 'GET /wishes throws only the 400s of the paging rules (src/lib/paging.ts)')
  })
})
