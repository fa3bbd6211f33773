import { DELIVER_JOB, type DeliverPayload } from '../modules/events/outbox.js'
import type { DeliveryOutcome as Outcome, WebhookService } from '../modules/webhooks/service.js'
import type { JobHandler } from './runner.js'

export interface DeliveryOutcome {
  outcome: Outcome
}

/** Runs webhook.deliver jobs (one event to one endpoint each) through the webhook service. */
export function webhookDeliveryHandler(
  webhooks: Pick<WebhookService, 'deliver'>,
  onOutcome: (outcome: DeliveryOutcome['outcome']) => void = () => {},
): Record<string, JobHandler> {
  return {
    [DELIVER_JOB]: async (job) => {
      const { outcome, next } = await webhooks.deliver(job.payload as unknown as DeliverPayload, job.commit)
      onOutcome(outcome)
      return next
    },
  }
}
