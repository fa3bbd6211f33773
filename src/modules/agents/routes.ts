import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { readErrors, writeErrors } from '../../http/schemas.js'
import { AgentKeySchema, AgentList, AgentParams, AgentRef, CreateAgentBody, CreateAgentKeyBody, DisableAgentBody, ListAgentsQuery } from './schemas.js'
import type { AgentService } from './service.js'

const tags = ['Agents']

export const agentRoutes: FastifyPluginAsyncTypebox<{ agents: AgentService }> = async (app, { agents }) => {
  app.post('/agents', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'createAgent',
      summary: 'Create an agent',
      description: 'An agent is a principal with its own keys (`ak_`, POST /agents/{id}/keys): it may pay only with the mandates granted to it (`agent_id` on POST /mandates) and read only those mandates and their payments. `public_jwk` (EC P-256 or OKP Ed25519, public members only; a private `d` is a 400) is the key an AP2 mandate\'s `cnf` names. Needs a secret key (sk_).',
      tags,
      body: CreateAgentBody,
      response: { 201: Type.Object({ data: AgentRef }, { description: 'The new agent' }), ...writeErrors() },
    },
  }, async (request, reply) => {
    reply.code(201)
    return { data: await agents.create(request.ctx, request.body) }
  })

  app.get('/agents', {
    schema: {
      operationId: 'listAgents',
      summary: 'List agents',
      description: 'Newest first; filter by `status`.',
      tags,
      querystring: ListAgentsQuery,
      response: { 200: AgentList, ...readErrors() },
    },
  }, async (request) => agents.list(request.ctx, request.query))

  app.get('/agents/:id', {
    schema: {
      operationId: 'getAgent',
      summary: 'Retrieve an agent',
      tags,
      params: AgentParams,
      response: { 200: Type.Object({ data: AgentRef }, { description: 'The agent' }), ...readErrors(404) },
    },
  }, async (request) => ({ data: await agents.get(request.ctx, request.params.id) }))

  app.post('/agents/:id/disable', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'disableAgent',
      summary: 'Disable an agent',
      description: 'For good: the agent\'s keys stop working (401 `invalid_api_key`, within a second on other processes) and it can be granted nothing more. Its mandates stay as they are; revoke them to release the wishes. An agent already disabled is a 409 `invalid_state_transition`.',
      tags,
      params: AgentParams,
      body: DisableAgentBody,
      response: { 200: Type.Object({ data: AgentRef }, { description: 'The disabled agent' }), ...writeErrors(404, 409) },
    },
  }, async (request) => ({ data: await agents.disable(request.ctx, request.params.id) }))

  app.post('/agents/:id/keys', {
    config: { idempotency: 'optional' },
    schema: {
      operationId: 'createAgentKey',
      summary: 'Create an agent key',
      description: 'A new `ak_` key for an active agent (a disabled one is a 409 `invalid_state_transition`). The secret is in this answer only (and in its idempotent replay, for the idempotency window). Needs a secret key (sk_).',
      tags,
      params: AgentParams,
      body: CreateAgentKeyBody,
      response: { 201: Type.Object({ data: AgentKeySchema }, { description: 'The key, with its secret' }), ...writeErrors(404, 409) },
    },
  }, async (request, reply) => {
    reply.code(201)
    const created = await agents.createKey(request.ctx, request.params.id)
    return { data: { id: created.id, key: created.key, account_id: created.account_id, scope: 'agent' as const, agent_id: request.params.id } }
  })
}
