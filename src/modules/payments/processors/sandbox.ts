import type { ChargeOutcome, ChargeRequest, Processor, SettlementOutcome } from './processor.js'

const DECLINES: Record<string, { code: string, message: string }> = {
  test_card_declined: { code: 'card_declined', message: 'The card was declined' },
  test_insufficient_funds: { code: 'insufficient_funds', message: 'The account has insufficient funds' },
}
const TRANSFER_FAILED = { code: 'bank_transfer_failed', message: 'The bank transfer was returned' }

/**
 * The default processor: deterministic outcomes by payment_method (contract section 6).
 * card and wallet succeed at once; test_card_declined and test_insufficient_funds fail at once;
 * bank_transfer and test_bank_transfer_failed settle after `settlementDelayMs`.
 */
export function createSandboxProcessor(options: { settlementDelayMs: number }): Processor {
  return {
    name: 'sandbox',
    sandbox: true,
    paymentMethods: ['card', 'wallet', 'bank_transfer', 'test_card_declined', 'test_insufficient_funds', 'test_bank_transfer_failed'],
    charge(request: ChargeRequest): ChargeOutcome {
      const decline = DECLINES[request.paymentMethod]
      if (decline) return { status: 'failed', failure: decline }
      if (request.paymentMethod === 'bank_transfer' || request.paymentMethod === 'test_bank_transfer_failed') {
        return { status: 'pending', settleAfterMs: options.settlementDelayMs }
      }
      return { status: 'succeeded' }
    },
    async settle(request: ChargeRequest): Promise<SettlementOutcome> {
      return request.paymentMethod === 'test_bank_transfer_failed' ? { status: 'failed', failure: TRANSFER_FAILED } : { status: 'succeeded' }
    },
  }
}
