import { ApiError, CommandUsageError, DEFAULT_BASE_URL } from './api.js'
import { DELIVERIES_USAGE, deliveriesCommand } from './deliveries.js'
import { EVENTS_TAIL_USAGE, eventsTailCommand } from './events-tail.js'
import { LISTEN_USAGE, listenCommand } from './listen.js'
import { TRIGGER_USAGE, triggerCommand } from './trigger.js'

/**
 * The commands that talk to a running server over HTTP instead of opening the database: they need
 * no server configuration, only --api-key (WISHPAY_API_KEY) and --base-url (WISHPAY_BASE_URL).
 */
const COMMANDS: Record<string, (args: string[]) => Promise<void>> = {
  listen: listenCommand,
  events: async ([action, ...rest]) => {
    if (action !== 'tail') throw new CommandUsageError(`Unknown events command: ${action ?? '(none)'}`)
    return eventsTailCommand(rest)
  },
  trigger: triggerCommand,
  deliveries: deliveriesCommand,
}

export const REMOTE_USAGE = `${LISTEN_USAGE}
${EVENTS_TAIL_USAGE}
${TRIGGER_USAGE}
${DELIVERIES_USAGE}
                                              (these four call a running server: --api-key KEY or
                                              WISHPAY_API_KEY; --base-url URL or WISHPAY_BASE_URL,
                                              default ${DEFAULT_BASE_URL})`

export function isRemoteCommand(command: string): boolean {
  return Object.hasOwn(COMMANDS, command)
}

/**
 * Runs one; its own failures are reported here: a usage mistake exits 2 with `usage`, an API error 1
 * with the envelope's message, a server that cannot be reached 1.
 */
export async function runRemoteCommand(command: string, args: string[], usage: string): Promise<void> {
  try {
    await COMMANDS[command]!(args)
  } catch (error) {
    if (error instanceof CommandUsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`${error.message}\n\n${usage}\n`)
      process.exitCode = 2
    } else if (error instanceof ApiError) {
      process.stderr.write(`wishpay ${command}: ${error.message} (${error.status} ${error.code})\n`)
      process.exitCode = 1
    } else if (error instanceof TypeError && error.message === 'fetch failed') {
      process.stderr.write(`wishpay ${command}: cannot reach the server: ${error.cause instanceof Error ? error.cause.message : 'fetch failed'}\n`)
      process.exitCode = 1
    } else {
      throw error
    }
  }
}
