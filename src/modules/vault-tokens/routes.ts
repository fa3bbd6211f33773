import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors, writeErrors } from '../../http/schemas.js'
import { RevokeVaultTokenBody, VaultTokenParams, VaultTokenRef } from './schemas.js'
import type { VaultTokenService } from './service.js'

const tags = ['ACP']

/** Wishpay's own view of ACP vault tokens (Wishpay's envelope; the ACP route is src/modules/acp/routes.ts). */
export const vaultTokenRoutes: FastifyPluginAsyncTypebox<{ vaultTokens: VaultTokenService }> = async (app, { vaultTokens }) => {
  app.get('/vault_tokens/:id', {
    schema: {
      operationId: 'getVaultToken',
      summary: 'Retrieve a vault token',
      description: 'A token made by POST /agentic_commerce/delegate_payment: its allowance, merchant and session, status (its mandate\'s) and what Wishpay keeps of the card (display fields and a keyed fingerprint; never the number or the CVC).',
      tags,
      params: VaultTokenParams,
      response: { 200: Type.Object({ data: VaultTokenRef }, { description: 'The vault token' }), ...readErrors(404) },
    },
  }, async (request) => ({ data: await vaultTokens.get(request.ctx, request.params.id) }))

  app.post('/vault_tokens/:id/revoke', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'revokeVaultToken',
      summary: 'Revoke a vault token',
      description: 'It can never pay from then on (its mandate is revoked). Only an active token can be revoked (else 409 `invalid_state_transition`).',
      tags,
      params: VaultTokenParams,
      body: RevokeVaultTokenBody,
      response: { 200: Type.Object({ data: VaultTokenRef }, { description: 'The revoked vault token' }), ...writeErrors(404, 409) },
    },
  }, async (request) => ({ data: await vaultTokens.revoke(request.ctx, request.params.id) }))
}
