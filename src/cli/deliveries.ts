import { parseArgs } from 'node:util'
import { apiRequest, CommandUsageError, TARGET_OPTIONS, targetOf } from './api.js'

export const DELIVERIES_USAGE = `  deliveries list ENDPOINT_ID [--json]        a webhook endpoint's delivery attempts, newest first
  deliveries resend DELIVERY_ID               send a delivery attempt's event to its endpoint again`

interface Attempt { id: string, event_id: string, event_type: string, attempt: number, status_code: number | null, error: string | null, created_at: string }

/** `wishpay deliveries list|resend`: GET /webhook_endpoints/:id/deliveries, POST /webhook_deliveries/:id/resend. */
export async function deliveriesCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args
  const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { ...TARGET_OPTIONS, json: { type: 'boolean', default: false } } })
  const id = positionals[0]
  if (action === 'resend') {
    if (!id || positionals.length > 1) throw new CommandUsageError('deliveries resend needs one DELIVERY_ID (wha_…, from deliveries list)')
    const target = targetOf(values)
    const resent = await apiRequest<{ event_id: string, event_type: string, endpoint_id: string, scheduled_at: string }>(
      target, 'POST', `/webhook_deliveries/${encodeURIComponent(id)}/resend`)
    if (values.json) process.stdout.write(`${JSON.stringify(resent)}\n`)
    else process.stdout.write(`Resending ${resent.event_type} ${resent.event_id} to ${resent.endpoint_id} (scheduled ${resent.scheduled_at}).\n`)
  } else if (action === 'list') {
    if (!id || positionals.length > 1) throw new CommandUsageError('deliveries list needs one ENDPOINT_ID (we_…)')
    const target = targetOf(values)
    const attempts = await apiRequest<Attempt[]>(target, 'GET', `/webhook_endpoints/${encodeURIComponent(id)}/deliveries?limit=100`)
    if (values.json) {
      process.stdout.write(`${JSON.stringify(attempts)}\n`)
      return
    }
    if (attempts.length === 0) process.stdout.write('No deliveries.\n')
    for (const a of attempts) {
      process.stdout.write(`${a.id}  ${a.created_at}  ${a.event_type.padEnd(20)} ${a.event_id}  attempt ${a.attempt}  ${a.status_code ?? a.error ?? ''}\n`)
    }
  } else {
    throw new CommandUsageError(`Unknown deliveries command: ${action ?? '(none)'}`)
  }
}
