import { type PaymentService, SETTLE_JOB, type SettlePayload } from '../modules/payments/service.js'
import type { JobHandler } from './runner.js'

/** Moves asynchronous payments along (pending -> processing -> final), one step per run. */
export function settlementHandler(payments: Pick<PaymentService, 'settleStep'>): Record<string, JobHandler> {
  return {
    [SETTLE_JOB]: (job) => payments.settleStep(job.payload as unknown as SettlePayload, job.commit),
  }
}
