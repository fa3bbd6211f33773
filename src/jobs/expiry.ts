import type { WishService } from '../modules/wishes/service.js'
import type { PeriodicTask } from './runner.js'

const BATCH = 200

/**
 * Stores `expired` on wishes and mandates whose time has passed, with their events, in batches until
 * none is left (the work is the wish service's expireLapsed).
 */
export function expirySweep(wishes: Pick<WishService, 'expireLapsed'>, everyMs = 1000): PeriodicTask {
  return {
    name: 'expiry',
    everyMs,
    async run() {
      while ((await wishes.expireLapsed(BATCH)) === BATCH) { /* next batch */ }
    },
  }
}
