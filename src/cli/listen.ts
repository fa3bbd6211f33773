import { parseArgs } from 'node:util'
import { Webhook } from 'standardwebhooks'
import { newWebhookSecret } from '../lib/ids.js'
import { send } from '../modules/webhooks/sender.js'
import { CommandUsageError, TARGET_OPTIONS, targetOf } from './api.js'
import { followEvents } from './event-stream.js'
import { untilStopped } from './signals.js'

export const LISTEN_USAGE = `  listen --forward-to URL [--events TYPES] [--secret whsec_…]
                                              forward the account's events, as they happen, to a
                                              local URL, signed as webhooks are (Standard Webhooks)
                                              with a secret printed at start (or --secret)`

/** A --secret must be one the receiver's Standard Webhooks library accepts. */
function checkedSecret(secret: string): string {
  try {
    new Webhook(secret)
  } catch {
    throw new CommandUsageError('--secret must be a Standard Webhooks secret: whsec_ followed by base64 (as wishpay listen prints)')
  }
  if (!secret.startsWith('whsec_')) throw new CommandUsageError('--secret must start with whsec_')
  return secret
}

/**
 * `wishpay listen`: follows GET /events/stream and POSTs each event to --forward-to, signed by the
 * server's own webhook sender (src/modules/webhooks/sender.ts) with a local secret, so a receiver checks
 * it with the code it runs in production. Private and loopback targets are the point here, so they are
 * allowed. One line per event with the receiver's answer; a failed forward is reported, not retried.
 */
export async function listenCommand(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { ...TARGET_OPTIONS, 'forward-to': { type: 'string' }, events: { type: 'string' }, secret: { type: 'string' } },
  })
  const target = targetOf(values)
  const forwardTo = values['forward-to']
  if (!forwardTo) throw new CommandUsageError('listen needs --forward-to URL (for example http://127.0.0.1:4000/hook)')
  if (!/^https?:\/\//i.test(forwardTo) || !URL.canParse(forwardTo)) throw new CommandUsageError(`--forward-to must be an http(s) URL: ${forwardTo}`)
  const secret = values.secret === undefined ? newWebhookSecret() : checkedSecret(values.secret)

  process.stdout.write(`Your webhook signing secret is ${secret} (verify with it; --secret keeps it across runs)\n`)
  await untilStopped((signal) => followEvents(target, {
    types: values.events,
    signal,
    onOpen: (reconnected) => {
      process.stdout.write(reconnected ? 'Reconnected; resuming after the last event received.\n'
        : `Ready! Forwarding events from ${target.baseUrl} to ${forwardTo} (^C to quit)\n`)
    },
    onEvent: async (event) => {
      const result = await send({ url: forwardTo, secret, eventId: event.id, body: event.body, now: new Date(), allowPrivate: true })
      const outcome = result.statusCode !== null ? `[${result.statusCode}]` : `[failed: ${result.error}]`
      process.stdout.write(`${new Date().toISOString()}  ${event.type}  ${event.id}  --> ${outcome} POST ${forwardTo}\n`)
    },
    onDrop: (reason, delayMs) => {
      process.stdout.write(`Stream dropped (${reason}); reconnecting in ${Math.round(delayMs / 1000)} s.\n`)
    },
  }))
}
