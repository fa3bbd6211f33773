import type { JsonWebKey } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { acpErrorBody, toAcpError } from '../../http/acp-errors.js'
import { PROTOCOL_VERSION_MARK } from '../../http/openapi.js'
import type { Clock } from '../../lib/clock.js'
import type { VaultTokenService } from '../vault-tokens/service.js'
import { ACP_DISCOVERY_CACHE_CONTROL, ACP_DISCOVERY_PATH, acpDiscoveryDocument, AcpDiscoveryDocumentSchema } from './discovery.js'
import { acpErrors } from './errors.js'
import { ACP_API_VERSION, AcpErrorResponseSchema, DelegatePaymentRequestSchema, DelegatePaymentResponseSchema, SUPPORTED_ACP_VERSIONS } from './schemas.js'
import { verifyAcpSignature } from './signature.js'

export const DELEGATE_PAYMENT_PATH = '/agentic_commerce/delegate_payment'

const acpError = (description: string) => ({ ...AcpErrorResponseSchema, description })

/** The official example request (examples.delegate_payment.json), its dates far ahead so the example does not go stale. */
const DELEGATE_PAYMENT_EXAMPLE = {
  payment_method: {
    type: 'card', card_number_type: 'fpan', virtual: false, number: '4242424242424242', exp_month: '11', exp_year: '2099', name: 'Jane Doe', cvc: '223',
    checks_performed: ['avs', 'cvv'], iin: '424242', display_card_funding_type: 'credit', display_wallet_type: 'apple_pay', display_brand: 'visa', display_last4: '4242',
    metadata: { issuing_bank: 'temp' },
  },
  allowance: { reason: 'one_time', max_amount: 2000, currency: 'usd', checkout_session_id: 'csn_01HV3P3XYZ9ABC', merchant_id: 'acme_store', expires_at: '2099-10-09T07:20:50.520Z' },
  billing_address: { name: 'Ada Lovelace', line_one: '1234 Chat Road', line_two: '', city: 'San Francisco', state: 'CA', country: 'US', postal_code: '94131' },
  risk_signals: [{ type: 'card_testing', score: 10, action: 'manual_review' }],
  metadata: { campaign: 'q4', source: 'chatgpt_checkout' },
}
const DELEGATE_PAYMENT_RESPONSE_EXAMPLE = {
  id: 'vt_01J8Z3WXYZ9ABC',
  created: '2026-04-17T12:00:00.000Z',
  metadata: { campaign: 'q4', source: 'chatgpt_checkout', merchant_id: 'acme_store', idempotency_key: '0b7c9a2e-5f4d-4e1a-9c3b-8d2f6a1e7b90' },
}

export interface AcpRouteDeps {
  vaultTokens: VaultTokenService
  /** The account's registered ACP client keys (trusted keys of role acp_client, active): signatures are required when there is one. */
  acpClientKeys: (accountId: string) => Promise<JsonWebKey[]>
  clock: Clock
}

/**
 * ACP's Delegate Payment API, 2026-04-17, in its own scope: everything it answers, errors of the
 * authentication and idempotency layers included, is ACP's flat error, and API-Version is ACP's.
 * Wishpay's own routes keep Wishpay's envelope.
 */
export const acpRoutes: FastifyPluginAsyncTypebox<AcpRouteDeps> = async (app, deps) => {
  app.setErrorHandler((error, request, reply) => {
    const acp = toAcpError(error, request.body)
    if (acp.status >= 500) request.log.error({ err: error }, 'request failed')
    return reply.status(acp.status).headers(acp.headers).send(acp.toBody())
  })
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('API-Version', ACP_API_VERSION)
    return payload
  })

  app.post(DELEGATE_PAYMENT_PATH, {
    // The card's number and CVC are in the body: its text is not remembered for retries (bodyHoldsSecrets).
    config: { idempotency: { mode: 'required', keyScope: `POST ${DELEGATE_PAYMENT_PATH}`, errorBody: acpErrorBody, bodyHoldsSecrets: true } },
    // rfc.delegate_payment.md 2.1: the version is checked before anything else of the request.
    onRequest: async (request) => {
      const version = request.headers['api-version']
      if (version === undefined || version === '') throw acpErrors.missingApiVersion()
      if (version !== ACP_API_VERSION && !SUPPORTED_ACP_VERSIONS.includes(String(version))) throw acpErrors.unsupportedApiVersion(String(version))
    },
    // 2.2: a client whose keys the account registered signs every request; verified over the body as sent.
    preHandler: async (request) => {
      const keys = await deps.acpClientKeys(request.ctx.accountId)
      if (keys.length === 0) return
      const header = (name: string) => { const v = request.headers[name]; return Array.isArray(v) ? v[0] : v }
      const result = verifyAcpSignature({ body: request.body, signature: header('signature'), timestamp: header('timestamp'), keys, now: deps.clock.now() })
      if (!result.ok) throw result.error
    },
    schema: {
      [PROTOCOL_VERSION_MARK]: ACP_API_VERSION,
      operationId: 'delegatePayment',
      summary: 'ACP: delegate a card within an allowance',
      description: `ACP Delegate Payment API, version ${ACP_API_VERSION} (agentic-commerce-protocol rfc.delegate_payment.md), byte for byte: \`API-Version: ${ACP_API_VERSION}\` and \`Idempotency-Key\` headers required; errors are ACP's flat \`{type, code, message, param}\` with \`param\` a JSONPath, not Wishpay's envelope. The card becomes a vault token (\`vt_…\`): a single-use mandate of protocol acp capped at \`allowance.max_amount\`, bound to \`merchant_id\` and \`checkout_session_id\`, until \`allowance.expires_at\`; redeem it with POST /payments and \`vault_token\`. Wishpay keeps the card's display fields and a keyed fingerprint, never the number or the CVC. \`metadata.wishpay_mandate_id\` makes the token draw on that mandate's budget too. When the account registered ACP client keys (POST /trusted_keys, role \`acp_client\`), \`Signature\` (Ed25519 or ES256 over the RFC 8785 canonical body, base64url) and \`Timestamp\` (within 5 minutes) are required.`,
      tags: ['ACP'],
      body: { ...DelegatePaymentRequestSchema, examples: [DELEGATE_PAYMENT_EXAMPLE] },
      response: {
        201: { ...DelegatePaymentResponseSchema, description: 'The vault token', examples: [DELEGATE_PAYMENT_RESPONSE_EXAMPLE] },
        400: acpError('Invalid request, a missing Idempotency-Key (idempotency_key_required) or API-Version (missing_api_version, unsupported_api_version, with supported_versions)'),
        401: acpError('Unauthorized, or a refused request signature'),
        403: acpError('The key may not delegate payments (a read or agent key)'),
        409: acpError('idempotency_in_flight: the first request with this key is still running; retry after Retry-After'),
        413: acpError('The body is too large'),
        415: acpError('The body is not application/json'),
        422: acpError('A card or allowance refused on its meaning (invalid_card, invalid_allowance, invalid_parent_mandate), or idempotency_conflict'),
        429: acpError('rate_limit_exceeded'),
        500: acpError('processing_error'),
        503: acpError('service_unavailable'),
      },
    },
  }, async (request, reply) => {
    reply.code(201)
    const key = request.headers['idempotency-key']
    return deps.vaultTokens.delegate(request.ctx, request.body, Array.isArray(key) ? key.join(',') : key ?? '')
  })
}

/** GET /.well-known/acp.json: open, per the discovery RFC. */
export const acpDiscoveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(ACP_DISCOVERY_PATH, {
    schema: {
      operationId: 'getAcpDiscovery',
      summary: 'ACP discovery document',
      description: 'The ACP versions and services Wishpay supports (rfc.discovery.md); open, cacheable.',
      tags: ['ACP'],
      security: [],
      response: { 200: Type.Object(AcpDiscoveryDocumentSchema.properties, { description: 'The discovery document' }) },
    },
  }, async (request, reply) => {
    reply.header('Cache-Control', ACP_DISCOVERY_CACHE_CONTROL)
    return acpDiscoveryDocument(`${request.protocol}://${request.host}`)
  })
}
