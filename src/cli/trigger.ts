import { randomUUID } from 'node:crypto'
import { parseArgs } from 'node:util'
import { type ApiTarget, apiRequest, CommandUsageError, TARGET_OPTIONS, targetOf } from './api.js'

export const TRIGGER_USAGE = `  trigger EVENT_TYPE                          make the objects that produce this event, through the
                                              API, in the key's account (e.g. payment.succeeded)`

interface Made { id: string, status?: string, protocol?: string }

/** The API calls that make objects, each printed as it is made. */
function maker(target: ApiTarget) {
  const make = async (what: string, method: string, path: string, body?: unknown): Promise<Made> => {
    const made = await apiRequest<Made>(target, method, path, body)
    process.stdout.write(`${what} ${made?.id ?? path}${made?.status ? ` (${made.status})` : ''}\n`)
    return made
  }
  const wish = () => make('Created wish', 'POST', '/wishes', { query: 'Made by wishpay trigger', metadata: { source: 'wishpay trigger' } })
  const mandate = async (usage: 'single_use' | 'multi_use' = 'multi_use') => {
    const w = await wish()
    return make('Created mandate', 'POST', '/mandates', {
      protocol: w.protocol,
      wish_id: w.id,
      max_amount: 5000,
      budget_amount: usage === 'single_use' ? 5000 : 20_000,
      usage,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    })
  }
  const payment = async (paymentMethod: string, usage: 'single_use' | 'multi_use' = 'multi_use') => {
    const m = await mandate(usage)
    return make('Created payment', 'POST', '/payments', { mandate_id: m.id, amount: 1999, payment_method: paymentMethod, idempotency_key: randomUUID() })
  }
  return { make, wish, mandate, payment }
}

type Recipe = (m: ReturnType<typeof maker>) => Promise<unknown>

/** How each event type is produced; payment.processing comes from settlement, a moment later. */
const RECIPES: Record<string, Recipe> = {
  'wish.created': (m) => m.wish(),
  'wish.updated': async (m) => m.make('Updated wish', 'PUT', `/wishes/${(await m.wish()).id}`, { metadata: { triggered: 'yes' } }),
  'wish.deleted': async (m) => m.make('Deleted wish', 'DELETE', `/wishes/${(await m.wish()).id}`),
  'mandate.created': (m) => m.mandate(),
  'mandate.revoked': async (m) => m.make('Revoked mandate', 'POST', `/mandates/${(await m.mandate()).id}/revoke`, {}),
  'mandate.consumed': (m) => m.payment('card', 'single_use'),
  'payment.created': (m) => m.payment('card'),
  'payment.succeeded': (m) => m.payment('card'),
  'payment.failed': (m) => m.payment('test_card_declined'),
  'payment.processing': (m) => m.payment('bank_transfer'),
  'payment.refunded': async (m) => m.make('Created refund', 'POST', `/payments/${(await m.payment('card')).id}/refunds`, { idempotency_key: randomUUID() }),
}

export const TRIGGERABLE_EVENTS = Object.keys(RECIPES)

/** `wishpay trigger EVENT_TYPE`. */
export async function triggerCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { ...TARGET_OPTIONS } })
  const [type, ...extra] = positionals
  const recipe = type === undefined ? undefined : RECIPES[type]
  if (!recipe || extra.length > 0) {
    throw new CommandUsageError(`trigger needs one event type, one of: ${TRIGGERABLE_EVENTS.join(', ')}`)
  }
  await recipe(maker(targetOf(values)))
  process.stdout.write(`Trigger succeeded: ${type} is on its way (wishpay events tail shows it).\n`)
}
