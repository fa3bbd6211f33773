// First, before anything else runs: keeps nextTick's shapes alive (lib/next-tick-shape.ts).
import './lib/next-tick-shape.js'
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, multiProcessProblem, type Config } from './config.js'
import { openConfiguredDatabase } from './db/database.js'
import { migrateToLatest } from './db/migrate.js'
import { recount, type CountDifference } from './db/recount.js'
import { systemClock } from './lib/clock.js'
import { AppError } from './lib/errors.js'
import { createAccountService } from './modules/accounts/service.js'
import { createAgentService } from './modules/agents/service.js'
import type { Scope } from './modules/accounts/keys.js'
import { rotateSigningKey } from './modules/receipts/signing-keys.js'
// server.js is imported when a command needs it: a cluster primary must not load the application.
// cli/remote.js (the commands that call a running server, and their event-stream parser) is imported
// only for those commands and the usage text, so a server does not hold it.

/** The remote commands' lines of the usage text; a line saying so if cli/remote.js cannot load (a broken install). */
const remoteUsage = async () => (await import('./cli/remote.js').catch(() => undefined))?.REMOTE_USAGE ??
  '  (the remote commands listen, events, trigger and deliveries could not be loaded)'

const usage = async () => `Usage: wishpay <command>

  serve [--no-jobs]                           run the API server (migrates first) with background
                                              jobs, unless --no-jobs; WORKERS=N runs N processes
                                              on one port (PostgreSQL only)
  worker                                      run background jobs only (settlement, expiry, purge)
  migrate                                     apply database migrations
  keys create --account NAME [--scope read|write] [--json]
                                              create an API key (and the account if new)
  keys create --agent AGT_ID [--json]         create an agent key (ak_) for an active agent
  keys list [--account NAME] [--json]         list API keys (never the secrets)
  keys revoke KEY_ID                          revoke an API key
  signing-keys rotate                         a new receipt signing key; the old ones are retired
                                              (still in /.well-known/jwks.json for 30 days)
  counts check [--account ACCT_ID] [--json]   compare the counters behind meta.total with the rows
                                              they count; exits 1 when one differs
  counts repair [--account ACCT_ID] [--json]  rebuild the counters that differ from their rows
                                              (safe while servers run)
${await remoteUsage()}

Configuration comes from the environment, as for the server (see README).`

class UsageError extends Error {}

async function withDatabase<T>(config: Config, work: (db: ReturnType<typeof openConfiguredDatabase>) => Promise<T>): Promise<T> {
  const db = openConfiguredDatabase(config, { queryTimeoutMs: 0, poolSize: 1 })
  try {
    await migrateToLatest(db)
    return await work(db)
  } finally {
    await db.close()
  }
}

async function keysCommand(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { account: { type: 'string' }, agent: { type: 'string' }, scope: { type: 'string' }, json: { type: 'boolean', default: false } },
  })
  await withDatabase(config, async (db) => {
    const accounts = createAccountService({ db, clock: systemClock })
    if (action === 'create' && values.agent !== undefined) {
      if (values.account !== undefined || values.scope !== undefined) throw new UsageError('keys create --agent takes neither --account nor --scope')
      const agents = createAgentService({ db, clock: systemClock, accounts })
      const created = await agents.createKeyForAgent(values.agent).catch((error: unknown) => {
        throw error instanceof AppError ? new UsageError(error.message) : error
      })
      if (values.json) {
        process.stdout.write(`${JSON.stringify({ id: created.id, key: created.key, account_id: created.account_id, scope: 'agent', agent_id: values.agent })}\n`)
      } else {
        process.stdout.write(`Created agent key ${created.id} for agent ${values.agent} (account ${created.account_id}).\n` +
          `The key is shown only this once:\n\n  ${created.key}\n\n`)
      }
    } else if (action === 'create') {
      if (!values.account) throw new UsageError('keys create needs --account NAME or --agent AGT_ID')
      const scope = (values.scope ?? 'write') as Scope
      // ak_ keys belong to an agent: --agent AGT_ID.
      if (scope !== 'read' && scope !== 'write') throw new UsageError('--scope must be read or write')
      const created = await accounts.createKey(values.account, scope)
      if (values.json) {
        process.stdout.write(`${JSON.stringify({ id: created.id, key: created.key, account_id: created.account_id, scope: created.scope })}\n`)
      } else {
        process.stdout.write(`Created ${scope} key ${created.id} for account "${values.account}" (${created.account_id}).\n` +
          `The key is shown only this once:\n\n  ${created.key}\n\n`)
      }
    } else if (action === 'list') {
      const keys = await accounts.listKeys(values.account)
      if (values.json) {
        process.stdout.write(`${JSON.stringify(keys)}\n`)
      } else if (keys.length === 0) {
        process.stdout.write('No keys.\n')
      } else {
        for (const k of keys) {
          process.stdout.write(`${k.id}  ${k.display_prefix.padEnd(10)} ${k.scope.padEnd(5)}  ${k.account_name}  created ${k.created_at}` +
            `${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}\n`)
        }
      }
    } else if (action === 'revoke') {
      const id = positionals[0]
      if (!id) throw new UsageError('keys revoke needs KEY_ID')
      const result = await accounts.revokeKey(id)
      if (result === 'not_found') throw new UsageError(`No such key: ${id}`)
      process.stdout.write(result === 'revoked' ? `Revoked ${id}.\n` : `${id} was already revoked.\n`)
    } else {
      throw new UsageError(`Unknown keys command: ${action ?? '(none)'}`)
    }
  })
}

async function signingKeysCommand(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args
  if (action !== 'rotate') throw new UsageError(`Unknown signing-keys command: ${action ?? '(none)'}`)
  if (rest.length > 0) throw new UsageError('signing-keys rotate takes no arguments')
  await withDatabase(config, async (db) => {
    const rotated = await rotateSigningKey(db, systemClock)
    const retired = rotated.retired.length > 0 ? rotated.retired.join(', ') : 'none'
    process.stdout.write(`New signing key ${rotated.kid} is active. Retired: ${retired} (published for 30 more days).\n` +
      'Running servers sign with the new key within a minute.\n')
  })
}

const describeDifference = (d: CountDifference, repaired: boolean) =>
  `${d.account_id}  ${d.counter} ${d.key}: counted ${d.counted}, rows ${d.rows}${repaired ? ` (now ${d.rows})` : ''}\n`

/** `counts check` reports the counts that differ from their rows (exit code 1 if any); `counts repair` rebuilds them. */
async function countsCommand(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args
  if (action !== 'check' && action !== 'repair') throw new UsageError(`Unknown counts command: ${action ?? '(none)'}`)
  const { values } = parseArgs({ args: rest, options: { account: { type: 'string' }, json: { type: 'boolean', default: false } } })
  const repair = action === 'repair'
  const result = await withDatabase(config, (db) => recount(db, { accountId: values.account, repair }))
  if (values.account !== undefined && result.accounts === 0) throw new UsageError(`No such account: ${values.account}`)
  if (values.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`)
  } else {
    for (const difference of result.differences) process.stdout.write(describeDifference(difference, repair))
    const accounts = `${result.accounts} account${result.accounts === 1 ? '' : 's'}`
    const n = result.differences.length
    const found = repair ? 'repaired' : n === 1 ? 'differs from its rows' : 'differ from their rows'
    process.stdout.write(n === 0 ? `Every count matches its rows (${accounts}).\n` : `${n} count${n === 1 ? '' : 's'} ${found} (${accounts}).\n`)
  }
  if (!repair && result.differences.length > 0) process.exitCode = 1
}

async function serveCommand(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { 'no-jobs': { type: 'boolean', default: false } } })
  const options = { jobs: !values['no-jobs'] }
  const problem = multiProcessProblem(config)
  if (problem) throw new ConfigError(problem)
  const { serve, serveWithWorkers } = await import('./server.js')
  return config.workers > 1 ? serveWithWorkers(config, options) : serve(config, options)
}

async function migrateCommand(config: Config): Promise<void> {
  const db = openConfiguredDatabase(config, { queryTimeoutMs: 0, poolSize: 1 })
  try {
    const applied = await migrateToLatest(db)
    process.stdout.write(applied.length > 0 ? `Applied ${applied.join(', ')}.\n` : 'The database schema is up to date.\n')
  } finally {
    await db.close()
  }
}

/** The commands that run the server or open the database: each takes the server's configuration. */
const LOCAL_COMMANDS: Record<string, (config: Config, args: string[]) => Promise<void>> = {
  serve: serveCommand,
  worker: async (config) => (await import('./server.js')).work(config),
  migrate: migrateCommand,
  keys: keysCommand,
  'signing-keys': signingKeysCommand,
  counts: countsCommand,
}

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${await usage()}\n`)
    return
  }
  if (Object.hasOwn(LOCAL_COMMANDS, command)) return LOCAL_COMMANDS[command]!(loadConfig(), args)
  // The others talk to a running server over HTTP and need none of its configuration.
  const remote = await import('./cli/remote.js')
  if (remote.isRemoteCommand(command)) return remote.runRemoteCommand(command, args, await usage())
  throw new UsageError(`Unknown command: ${command}`)
}

main(process.argv.slice(2)).catch(async (error: unknown) => {
  if (error instanceof ConfigError || error instanceof UsageError) {
    process.stderr.write(`${error.message}\n`)
    if (error instanceof UsageError) process.stderr.write(`\n${await usage()}\n`)
    process.exit(error instanceof UsageError ? 2 : 1)
  }
  process.stderr.write(`wishpay: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
  process.exit(1)
})
