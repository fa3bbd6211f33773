import { fetchInit, idempotencyHeader, type RequestOptions, send } from '../request.js'
import type { Api, WebhookDeliveryResend } from '../types.js'

/** `/webhook_deliveries`: one event's delivery to one endpoint (list them with `webhookEndpoints.listDeliveries`). */
export class WebhookDeliveries {
  constructor(private readonly api: Api) {}

  /** Schedules the delivery's event to be sent to its endpoint again. */
  async resend(id: string, options?: RequestOptions): Promise<WebhookDeliveryResend> {
    const header = idempotencyHeader(options)
    return (await send(this.api.POST('/webhook_deliveries/{id}/resend', { params: { path: { id }, header }, ...fetchInit(options) }))).data
  }
}
