import { parseArgs } from 'node:util'
import { TARGET_OPTIONS, targetOf } from './api.js'
import { followEvents } from './event-stream.js'
import { untilStopped } from './signals.js'

export const EVENTS_TAIL_USAGE = `  events tail [--types TYPES] [--json]        print the account's events as they happen: one line
                                              each, or the event as JSON with --json`

/** `wishpay events tail`: GET /events/stream, printed. */
export async function eventsTailCommand(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { ...TARGET_OPTIONS, types: { type: 'string' }, json: { type: 'boolean', default: false } } })
  const target = targetOf(values)
  await untilStopped((signal) => followEvents(target, {
    types: values.types,
    signal,
    onOpen: (reconnected) => {
      // stderr, so that --json output stays one event per line.
      process.stderr.write(reconnected ? 'Reconnected.\n' : `Following events of ${target.baseUrl} (^C to quit)\n`)
    },
    onEvent: async (event) => {
      if (values.json) {
        process.stdout.write(`${event.body}\n`)
        return
      }
      const parsed = JSON.parse(event.body) as { created_at: string, data: { object: { id: string } } }
      process.stdout.write(`${parsed.created_at}  ${event.type.padEnd(20)} ${event.id}  ${parsed.data.object.id}\n`)
    },
    onDrop: (reason, delayMs) => {
      process.stderr.write(`Stream dropped (${reason}); reconnecting in ${Math.round(delayMs / 1000)} s.\n`)
    },
  }))
}
