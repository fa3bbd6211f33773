import js from '@eslint/js'
import tseslint from 'typescript-eslint'

const NO_DIALECT = {
  selector: "MemberExpression[property.name=/^(dialect|sqlite)$/], VariableDeclarator > ObjectPattern > Property[key.name=/^(dialect|sqlite)$/]",
  message: 'Dialect differences live in src/db/ only (rule 7): use a db/ helper (db/dialect.ts forUpdate, forUpdateSkipLocked, byStore) or a Database property instead of reading .dialect or .sqlite.',
}

const NO_AMBIENT_TIME_OR_RANDOMNESS = [
  {
    selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
    message: 'Time comes from the injected clock (rule 6): clock.now(); for a duration use performance.now().',
  },
  {
    selector: "NewExpression[callee.name='Date'][arguments.length=0]",
    message: 'Time comes from the injected clock (rule 6): clock.now().',
  },
  {
    selector: "MemberExpression[object.name='Math'][property.name='random']",
    message: 'Randomness comes from src/lib/ids.ts (rule 6): randomFraction(), randomIndex(n), randomBase62(n).',
  },
]

const NO_KYSELY = {
  name: 'kysely',
  message: 'Only src/db/ and repository.ts files touch Kysely (rule 1); import Executor and Trx from src/db/database.ts.',
}

const NO_AMBIENT_RANDOMNESS = {
  name: 'node:crypto',
  importNames: ['randomBytes', 'randomInt', 'randomUUID', 'randomFillSync', 'getRandomValues'],
  message: 'Randomness comes from src/lib/ids.ts (rule 6).',
}

const NOT_FROM_UPPER_LAYERS = {
  regex: '(^|/)(modules|http|jobs)/',
  message: 'src/lib/ and src/db/ are the bottom layers: they import nothing from modules/, http/ or jobs/.',
}

const NOT_FROM_HTTP_OR_JOBS = {
  regex: '(^|/)(http|jobs)/',
  message: "Modules' services and repositories never import http/ or jobs/: jobs call services, not the reverse (the queue is src/modules/queue/repository.ts).",
}

const NOT_FROM_JOBS = {
  regex: '(^|/)jobs/',
  message: 'Modules never import jobs/ (the queue is src/modules/queue/repository.ts).',
}

/** Packages a server imports on first use (docs/decisions.md), each through the one import() or require named. */
const onFirstUse = (name, where) => ({ name, allowTypeImports: true, message: `${name} is imported on first use, by ${where}: import its types with \`import type\`.` })

const LOADED_ON_FIRST_USE = [
  onFirstUse('jose', 'lib/jose.ts (loadJose)'),
  onFirstUse('@sd-jwt/decode', 'modules/ap2/open-mandate.ts'),
  onFirstUse('@fastify/swagger-ui', 'http/openapi.ts, when /docs is opened'),
  onFirstUse('ioredis', 'http/rate-limit.ts, when REDIS_URL is set'),
  onFirstUse('better-sqlite3', 'db/database.ts (loadSqlite), when a SQLite store is opened'),
]

const NO_VALUE_IMPORT_OF_LAZY_MODULES = {
  paths: [
    { name: 'pg', allowTypeImports: true, message: 'node-pg is loaded with the pool, on PostgreSQL only (db/postgres-pool.ts): import its types with `import type`.' },
    ...LOADED_ON_FIRST_USE,
  ],
  patterns: [
    { regex: '(^|/)prepared-statements\\.js$', allowTypeImports: true, message: 'prepared-statements.ts loads node-pg: only db/postgres-pool.ts imports it; import its types with `import type`.' },
    // The rule does not look at import() expressions: db/database.ts's dynamic import is the one way in.
    { regex: '(^|/)postgres-pool\\.js$', allowTypeImports: true, message: 'postgres-pool.ts loads node-pg: db/database.ts imports it with import() when it opens PostgreSQL; import its types with `import type`.' },
  ],
}

const LOCALE_METHODS = ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString', 'toLocaleUpperCase', 'toLocaleLowerCase', 'localeCompare']
const INTL_MESSAGE = 'ICU\'s locale data costs a server about 6.5 MB once touched: currencies are in lib/currency-exponents.ts (npm run currencies:generate).'

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'dist-*/', 'data/', 'bench/results/', 'dashboard/dist/', 'packages/*/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  // The command's launcher is plain JavaScript run by node.
  { files: ['bin/**/*.js'], languageOptions: { globals: { process: 'readonly' } } },
  {
    rules: {
      // Migrations describe the schema at their own point in time, so they take Kysely<any>.
      '@typescript-eslint/no-explicit-any': ['error', { ignoreRestArgs: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    files: ['src/db/migrations/**', 'test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },

  // The rules of the house (the shared ARCHITECTURE.md, docs/architecture.md, README "Development"), checked by lint.
  // ESLint does not merge one rule's options across blocks: a later block that matches a file replaces
  // the rule's options of an earlier one, so each block below repeats what still applies to its files.
  {
    // Rule 7: dialect differences live in db/ only.
    files: ['src/**/*.ts'],
    ignores: ['src/db/**'],
    rules: { 'no-restricted-syntax': ['error', NO_DIALECT] },
  },
  {
    // Rule 6: time from the injected clock, randomness from lib/ids.ts.
    files: ['src/modules/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', NO_DIALECT, ...NO_AMBIENT_TIME_OR_RANDOMNESS] },
  },
  {
    // Rule 1: repositories own SQL; nothing else touches Kysely (types come from db/database.ts).
    files: ['src/**/*.ts'],
    ignores: ['src/db/**', 'src/**/repository.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [NO_KYSELY] }] },
  },
  {
    // Layers: lib/ and db/ are the bottom; they import nothing from modules/, http/ or jobs/.
    files: ['src/lib/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [NO_KYSELY], patterns: [NOT_FROM_UPPER_LAYERS] }] },
  },
  {
    files: ['src/db/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_FROM_UPPER_LAYERS] }] },
  },
  {
    // Modules' services, repositories and the rest never import http/ or jobs/; routes.ts and schemas.ts
    // may use http/'s schema helpers and plugins, never jobs/.
    files: ['src/modules/**/*.ts'],
    ignores: ['src/modules/**/routes.ts', 'src/modules/**/schemas.ts', 'src/modules/**/repository.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [NO_KYSELY, NO_AMBIENT_RANDOMNESS], patterns: [NOT_FROM_HTTP_OR_JOBS] }] },
  },
  {
    files: ['src/modules/**/repository.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [NO_AMBIENT_RANDOMNESS], patterns: [NOT_FROM_HTTP_OR_JOBS] }] },
  },
  {
    files: ['src/modules/**/routes.ts', 'src/modules/**/schemas.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [NO_KYSELY, NO_AMBIENT_RANDOMNESS], patterns: [NOT_FROM_JOBS] }] },
  },
  {
    // A SQLite server never loads node-pg (docs/decisions.md): its value imports live in the two modules
    // that db/database.ts imports only when it opens PostgreSQL; a PostgreSQL server never loads
    // better-sqlite3, which db/database.ts requires when it opens SQLite. The packages only some requests need
    // are imported on first use, with import(). `import { type X }` would still load the
    // module under verbatimModuleSyntax, hence `import type` for type-only imports everywhere in src/.
    // typescript-eslint's no-restricted-imports (deprecated since 8.64 for the core rule, which now takes
    // allowTypeImports too) is used because its name differs: the core rule's options here would replace
    // the layering options the blocks above give it for the same files.
    files: ['src/**/*.ts'],
    ignores: ['src/db/postgres-pool.ts', 'src/db/prepared-statements.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', NO_VALUE_IMPORT_OF_LAZY_MODULES],
      '@typescript-eslint/no-import-type-side-effects': 'error',
    },
  },
  {
    // node-pg's two modules may import it; the packages loaded on first use stay refused there too.
    files: ['src/db/postgres-pool.ts', 'src/db/prepared-statements.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { paths: LOADED_ON_FIRST_USE }],
      '@typescript-eslint/no-import-type-side-effects': 'error',
    },
  },
  {
    // A process's first Intl service (a NumberFormat, a Collator, a toLocaleString) maps about 6.5 MB of
    // ICU's locale data (docs/performance.md, thirty-ninth pass): currencies' exponents come from a table
    // generated from ICU (lib/currency-exponents.ts), and the API formats nothing for a locale.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-globals': ['error', { name: 'Intl', message: INTL_MESSAGE }],
      'no-restricted-properties': [
        'error',
        { object: 'globalThis', property: 'Intl', message: INTL_MESSAGE },
        ...LOCALE_METHODS.map((property) => ({ property, message: INTL_MESSAGE })),
      ],
    },
  },
)
