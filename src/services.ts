import type { Config } from './config.js'
import type { Database } from './db/database.js'
import type { Clock } from './lib/clock.js'
import { createAccountService } from './modules/accounts/service.js'
import { createAgentService } from './modules/agents/service.js'
import { createMandateService } from './modules/mandates/service.js'
import type { Processor } from './modules/payments/processors/processor.js'
import { createSandboxProcessor } from './modules/payments/processors/sandbox.js'
import { createPaymentService } from './modules/payments/service.js'
import { createReceiptService } from './modules/receipts/service.js'
import { createNonceService } from './modules/ap2/nonces.js'
import { createVaultTokenService } from './modules/vault-tokens/service.js'
import { createTrustedKeyService } from './modules/trusted-keys/service.js'
import { createEventService } from './modules/events/service.js'
import { createWebhookService } from './modules/webhooks/service.js'
import { createWishService } from './modules/wishes/service.js'

export interface ServiceDeps {
  config: Config
  db: Database
  clock: Clock
  /** The payment processor adapter; the sandbox unless another is given. */
  processor?: Processor
}

/** Every service of the application, built once around the same database and clock. */
export function createServices(deps: ServiceDeps) {
  const { config, db, clock } = deps
  const processor = deps.processor ?? createSandboxProcessor({ settlementDelayMs: config.sandboxSettlementDelayMs })
  const accounts = createAccountService({ db, clock })
  const trustedKeys = createTrustedKeyService({ db, clock })
  return {
    accounts,
    agents: createAgentService({ db, clock, accounts }),
    wishes: createWishService({ db, clock, config }),
    mandates: createMandateService({ db, clock, verifyOpenMandate: trustedKeys.verifyOpenMandate }),
    payments: createPaymentService({ db, clock, processor }),
    events: createEventService({ db }),
    webhooks: createWebhookService({ db, clock, config }),
    trustedKeys,
    nonces: createNonceService({ db, clock }),
    vaultTokens: createVaultTokenService({ db, clock, cardFingerprintSecret: config.cardFingerprintSecret }),
    receipts: createReceiptService({ db, clock }),
  }
}

export type Services = ReturnType<typeof createServices>
