/**
 * GENERATED FILE: do not edit. The types of Wishpay's HTTP API, made by openapi-typescript (the version
 * pinned in the root package.json) from the OpenAPI document the server serves at /openapi.json.
 * Regenerate with `npm run sdk:generate` (scripts/generate-sdk.ts); `npm test` fails when it is stale.
 */

export interface paths {
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * This API description
         * @description OpenAPI 3.1, generated from the route schemas.
         */
        get: operations["getOpenApi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics
         * @description Prometheus text format. Open, unless METRICS_TOKEN is set: then send it as `Authorization: Bearer <token>`.
         */
        get: operations["getMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Liveness
         * @description 200 while the process runs.
         */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Readiness
         * @description 200 when the database answers and the process is not shutting down, else 503 `service_unavailable`.
         */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/jwks.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Wishpay's public keys
         * @description The JWK Set that AP2 receipts verify with: the active keys, and keys retired less than 30 days ago (so receipts they signed still verify). No authentication; cacheable for 5 minutes.
         */
        get: operations["getJwks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/acp.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * ACP discovery document
         * @description The ACP versions and services Wishpay supports (rfc.discovery.md); open, cacheable.
         */
        get: operations["getAcpDiscovery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/wishes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List wishes
         * @description Newest first. `status` filters on the status a reader sees, so a wish past its `expires_at` is listed as `expired`.
         */
        get: operations["listWishes"];
        put?: never;
        /**
         * Create a wish
         * @description Creates a wish in `active` status. `protocol: auto` (the default) is resolved to the default protocol, so the stored value is always `ap2` or `acp`. An optional `idempotency_key` (or `Idempotency-Key` header) makes a retry replay the first answer.
         */
        post: operations["createWish"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/wishes/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a wish */
        get: operations["getWish"];
        /**
         * Update a wish
         * @description Partial update: only the members sent change. `budget` is replaced (`null` clears it); `metadata` is merged and a key set to `null` is removed. Status moves: active -> pending|fulfilled|cancelled|expired, pending -> active|fulfilled|cancelled|expired; fulfilled, cancelled and expired are final and then only `metadata` may change. `agent_id` assigns the wish to an active agent of the account (else 422 `agent_not_usable`): a `pending` wish (waiting for agent assignment) becomes `active` unless the request also names a `status`; `agent_id: null` unassigns and leaves the status as it is. A wish without an agent has no `agent_id` member.
         */
        put: operations["updateWish"];
        post?: never;
        /** Delete a wish */
        delete: operations["deleteWish"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/mandates": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List mandates
         * @description Newest first; filter by `status` (as read: an active mandate past `expires_at` is `expired`) and `wish_id`.
         */
        get: operations["listMandates"];
        put?: never;
        /**
         * Create a mandate
         * @description Grants an agent a bounded authority to spend: at most `max_amount` per payment and `budget_amount` in all, until `expires_at`. With `wish_id`, the wish must be open (else 422 `wish_not_usable`), share the protocol (`protocol_mismatch`), and `budget_amount` may not exceed its budget (`wish_budget_exceeded`); the wish's budget currency becomes the mandate's (`currency_mismatch` if another is sent). With `ap2.open_payment_mandate` the terms come from an AP2 open Payment Mandate signed by a trusted key (refusals: `issuer_untrusted`, `mandate_signature_invalid`, `disclosure_invalid`, `mandate_expired`, `constraint_unsupported`, … as 422 `payment_error`, `mandate_malformed` as 400); one open mandate makes one mandate (`mandate_replayed`).
         */
        post: operations["createMandate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/mandates/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a mandate */
        get: operations["getMandate"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/mandates/{id}/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke a mandate
         * @description Stops all further payments. Only an active mandate can be revoked (else 409 `invalid_state_transition`).
         */
        post: operations["revokeMandate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/payments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List payments
         * @description Newest first; filter by `status`, `mandate_id`, `wish_id`.
         */
        get: operations["listPayments"];
        put?: never;
        /**
         * Create a payment
         * @description Pays against a mandate. The mandate is checked atomically, in this order, and the first failure answers 422 `payment_error`: `mandate_not_found`, `mandate_revoked`, `mandate_expired`, `mandate_not_yet_valid`, `mandate_consumed`, `currency_mismatch`, `amount_exceeds_mandate`, `mandate_budget_exceeded`. On a mandate made from an AP2 open mandate, the hold also checks its least amount, `max_occurrences` and recurrence window (`constraint_unsatisfied`, `param` the constraint), and the payment needs `ap2.payment_mandate` (`ap2_mandate_required`), a closed mandate verified as its description says; each closed mandate pays once (`mandate_replayed`). A declined payment is still a 201, with `status: failed`. A payment operation: `idempotency_key` (body) or `Idempotency-Key` (header) is required. A retry with the same key and request replays the first answer byte for byte with `Idempotent-Replayed: true`; the same key with another request is 422 `idempotency_key_reused`; while the first is still running, 409 `idempotency_key_in_use`.
         */
        post: operations["createPayment"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/payments/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a payment */
        get: operations["getPayment"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/payments/{id}/refunds": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a payment's refunds */
        get: operations["listRefunds"];
        put?: never;
        /**
         * Refund a payment
         * @description Refunds all that remains (the default) or part of a succeeded payment; the payment becomes `refunded` when nothing remains. 422 `payment_not_refundable` for a payment that is not succeeded, `refund_exceeds_payment` for more than remains. Refunds never give budget back to the mandate. A payment operation: `idempotency_key` (body) or `Idempotency-Key` (header) is required. A retry with the same key and request replays the first answer byte for byte with `Idempotent-Replayed: true`; the same key with another request is 422 `idempotency_key_reused`; while the first is still running, 409 `idempotency_key_in_use`.
         */
        post: operations["createRefund"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/payments/{id}/settle": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Settle a sandbox payment now
         * @description A test convenience of the sandbox processor: a `pending` or `processing` payment (`bank_transfer`, `test_bank_transfer_failed`) settles at once instead of after `SANDBOX_SETTLEMENT_DELAY_MS`, through the settlement job's own steps: `payment.processing` (if it was pending), then `payment.succeeded` or `payment.failed` (`test_bank_transfer_failed`: `bank_transfer_failed`), with their webhooks, and the mandate consumed or released as the job would. 200 with the settled payment. A payment already final is 409 `invalid_state_transition` (a retry with the same idempotency key replays the first answer instead); a server whose processor is not the sandbox answers 400 `sandbox_only`. An idempotency key is optional, as on every POST that is not a payment operation.
         */
        post: operations["settlePayment"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Stream events (server-sent events)
         * @description The account's events as they happen, as `text/event-stream`: each message has `id:` the event id, `event:` its type and `data:` the event exactly as `GET /events/{id}` returns it. The first message carries only `retry:` and `id:` (the position the stream starts after). To resume, send the last id received as `Last-Event-ID` (EventSource does so on reconnection) or `starting_after`: every later event follows, none twice. Without either, the stream starts at the moment of connection. Events arrive about 2 s after they happen (EVENT_STREAM_SETTLE_MS; the stream looks every EVENT_STREAM_POLL_MS, 500 ms, and sends an event once no earlier one can still commit). A `: ping` comment comes every 15 s. At most 5 streams per account on one server: one more is a 400 `resource_limit_exceeded`. Read keys may stream; agent keys may not. `wishpay listen` and `wishpay events tail` use this route.
         */
        get: operations["streamEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List events
         * @description Every state change of the account, newest first, kept 30 days; filter by `type`.
         */
        get: operations["listEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve an event */
        get: operations["getEvent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook_endpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List webhook endpoints */
        get: operations["listWebhookEndpoints"];
        put?: never;
        /**
         * Create a webhook endpoint
         * @description Events of the listed types (or all, with `["*"]`) are POSTed to `url`, signed per Standard Webhooks v1 with the `secret` returned here and nowhere else. Private, loopback, link-local and multicast targets are refused unless WEBHOOK_ALLOW_PRIVATE is set. An account may have at most 16 endpoints: one more is a 400 `resource_limit_exceeded`.
         */
        post: operations["createWebhookEndpoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook_endpoints/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a webhook endpoint */
        get: operations["getWebhookEndpoint"];
        /**
         * Update a webhook endpoint
         * @description Partial: `url`, `events`, `enabled`, `description`. `enabled: true` re-enables an endpoint disabled after a 410.
         */
        put: operations["updateWebhookEndpoint"];
        post?: never;
        /** Delete a webhook endpoint */
        delete: operations["deleteWebhookEndpoint"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook_endpoints/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List delivery attempts
         * @description Every attempt to deliver an event to this endpoint, newest first: event, status code, error, time and next retry.
         */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook_deliveries/{id}/resend": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resend a webhook delivery
         * @description Sends the event of a delivery attempt (`wha_…`, from the endpoint's deliveries) to its endpoint again, at once, signed anew; the new attempt appears in the endpoint's deliveries. Each call schedules one delivery (send an idempotency key to make a retry safe). A disabled endpoint is a 409 `invalid_state_transition`; an event past its 30 days, a 404.
         */
        post: operations["resendWebhookDelivery"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/agents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List agents
         * @description Newest first; filter by `status`.
         */
        get: operations["listAgents"];
        put?: never;
        /**
         * Create an agent
         * @description An agent is a principal with its own keys (`ak_`, POST /agents/{id}/keys): it may pay only with the mandates granted to it (`agent_id` on POST /mandates) and read only those mandates and their payments. `public_jwk` (EC P-256 or OKP Ed25519, public members only; a private `d` is a 400) is the key an AP2 mandate's `cnf` names. Needs a secret key (sk_).
         */
        post: operations["createAgent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/agents/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve an agent */
        get: operations["getAgent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/agents/{id}/disable": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Disable an agent
         * @description For good: the agent's keys stop working (401 `invalid_api_key`, within a second on other processes) and it can be granted nothing more. Its mandates stay as they are; revoke them to release the wishes. An agent already disabled is a 409 `invalid_state_transition`.
         */
        post: operations["disableAgent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/agents/{id}/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create an agent key
         * @description A new `ak_` key for an active agent (a disabled one is a 409 `invalid_state_transition`). The secret is in this answer only (and in its idempotent replay, for the idempotency window). Needs a secret key (sk_).
         */
        post: operations["createAgentKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/trusted_keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List trusted keys
         * @description Newest first; filter by `status` and `role`.
         */
        get: operations["listTrustedKeys"];
        put?: never;
        /**
         * Trust an issuer key
         * @description Registers a public key this account trusts to sign AP2 open mandates, as a Trusted Agent Provider (`trusted_agent_provider`) or a User Credential issuer (`user_credential_issuer`). The JWK needs a `kid` (unique in the account, revoked keys included: a 409 `kid_in_use` otherwise) and is EC P-256 (ES256), OKP Ed25519 (EdDSA) or RSA of 2048 bits or more (RS256, PS256). A private member (`d`, ...), a smaller RSA key, another `kty` or `crv`, or a point off the curve is a 400 naming the member (`param`: `public_jwk.d`, ...). Needs a secret key (sk_).
         */
        post: operations["createTrustedKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/trusted_keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a trusted key */
        get: operations["getTrustedKey"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/trusted_keys/{id}/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke a trusted key
         * @description For good: AP2 mandates signed by this key are refused from then on (422 `issuer_untrusted`); Wishpay mandates already made from them stay as they are (revoke those to stop them). Its `kid` stays taken. A key already revoked is a 409 `invalid_state_transition`.
         */
        post: operations["revokeTrustedKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/ap2/nonces": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Get a nonce for an AP2 closed mandate
         * @description A fresh nonce and this account's `audience`. The agent signs them into its closed Payment Mandate (`nonce`, `aud`) and pays with it within 5 minutes; a nonce pays once (422 `nonce_invalid` when unknown, used or lapsed). A nonce asked for with an agent key (ak_) serves that agent only.
         */
        post: operations["createAp2Nonce"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/vault_tokens/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Retrieve a vault token
         * @description A token made by POST /agentic_commerce/delegate_payment: its allowance, merchant and session, status (its mandate's) and what Wishpay keeps of the card (display fields and a keyed fingerprint; never the number or the CVC).
         */
        get: operations["getVaultToken"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/vault_tokens/{id}/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke a vault token
         * @description It can never pay from then on (its mandate is revoked). Only an active token can be revoked (else 409 `invalid_state_transition`).
         */
        post: operations["revokeVaultToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/agentic_commerce/delegate_payment": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * ACP: delegate a card within an allowance
         * @description ACP Delegate Payment API, version 2026-04-17 (agentic-commerce-protocol rfc.delegate_payment.md), byte for byte: `API-Version: 2026-04-17` and `Idempotency-Key` headers required; errors are ACP's flat `{type, code, message, param}` with `param` a JSONPath, not Wishpay's envelope. The card becomes a vault token (`vt_…`): a single-use mandate of protocol acp capped at `allowance.max_amount`, bound to `merchant_id` and `checkout_session_id`, until `allowance.expires_at`; redeem it with POST /payments and `vault_token`. Wishpay keeps the card's display fields and a keyed fingerprint, never the number or the CVC. `metadata.wishpay_mandate_id` makes the token draw on that mandate's budget too. When the account registered ACP client keys (POST /trusted_keys, role `acp_client`), `Signature` (Ed25519 or ES256 over the RFC 8785 canonical body, base64url) and `Timestamp` (within 5 minutes) are required.
         */
        post: operations["delegatePayment"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/payments/{id}/receipt": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Retrieve a payment's AP2 receipt
         * @description The AP2 PaymentReceipt of a payment made with an AP2 closed mandate: an ES256 JWT signed by Wishpay (verify it with `GET /.well-known/jwks.json`), `status` Success for a succeeded or refunded payment, Error for a failed one. It is signed on the first read after the payment is final and every later read answers the same receipt. A payment not made with an AP2 mandate, or not in your account (an agent key: not on its agent's mandates), is a 404 `resource_missing`; a payment still pending or processing is a 409 `invalid_state_transition` (retry once it is final).
         */
        get: operations["getPaymentReceipt"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * Error
         * @description The one error envelope. Each status has its own schema (Error400, Error401, ...) listing the type and codes it can carry.
         * @example {
         *       "error": {
         *         "type": "authentication_error",
         *         "code": "invalid_api_key",
         *         "message": "The API key is invalid or has been revoked",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error: {
            error: {
                /** @description Error category, e.g. invalid_request_error */
                type: string;
                /** @description Machine-readable code, e.g. parameter_invalid */
                code: string;
                /** @description Human-readable explanation */
                message: string;
                /** @description The parameter at fault, when there is one */
                param?: string;
                /** @description Every failed parameter, on validation errors */
                errors?: {
                    /** @description The parameter, dotted for nested members (budget.max) */
                    param: string;
                    /** @enum {string} */
                    code: "parameter_missing" | "parameter_invalid" | "parameter_unknown";
                    message: string;
                }[];
                /** @description The Request-Id of this request */
                request_id: string;
            };
        };
        /**
         * Wish
         * @example {
         *       "id": "wish_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "status": "active",
         *       "query": "Noise-cancelling headphones under $200",
         *       "budget": {
         *         "max": 199.99,
         *         "currency": "USD"
         *       },
         *       "protocol": "ap2",
         *       "category": "electronics",
         *       "metadata": {
         *         "order_ref": "A-1001"
         *       },
         *       "expires_at": null,
         *       "created_at": "2026-11-22T10:00:00.000Z",
         *       "updated_at": "2026-11-22T10:00:00.000Z"
         *     }
         */
        Wish: {
            /** @example wish_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            /**
             * @description active, pending, fulfilled, cancelled or expired
             * @enum {string}
             */
            status: "active" | "pending" | "fulfilled" | "cancelled" | "expired";
            query: string;
            budget: {
                max: number | null;
                currency: string;
            } | null;
            /**
             * @description The concrete protocol; auto is resolved on create
             * @enum {string}
             */
            protocol: "ap2" | "acp";
            category: string | null;
            /**
             * @description Your own key-value pairs: up to 50 keys of at most 40 characters, string values of at most 500 characters.
             * @example {
             *       "order_ref": "A-1001"
             *     }
             */
            metadata: {
                [key: string]: string;
            };
            expires_at: string | null;
            /** @description The agent the wish is assigned to; absent when none is */
            agent_id?: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            updated_at: string;
        };
        /**
         * Mandate
         * @example {
         *       "id": "mdt_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "protocol": "ap2",
         *       "status": "active",
         *       "wish_id": "wish_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "agent_id": null,
         *       "currency": "USD",
         *       "max_amount": 5000,
         *       "budget_amount": 15000,
         *       "amount_used": 0,
         *       "usage": "multi_use",
         *       "uses_count": 0,
         *       "expires_at": "2099-12-31T23:59:59.000Z",
         *       "not_before": null,
         *       "metadata": {},
         *       "created_at": "2026-11-22T10:00:00.000Z",
         *       "updated_at": "2026-11-22T10:00:00.000Z",
         *       "revoked_at": null,
         *       "ap2": null
         *     }
         */
        Mandate: {
            /** @example mdt_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            /** @enum {string} */
            protocol: "ap2" | "acp";
            /**
             * @description active, revoked, expired or consumed (a single_use mandate that paid)
             * @enum {string}
             */
            status: "active" | "revoked" | "expired" | "consumed";
            wish_id: string | null;
            agent_id: string | null;
            /** @description ISO 4217, upper-case */
            currency: string;
            /** @description Cap on each payment, minor units */
            max_amount: number;
            /** @description Cap on the sum of payments, minor units */
            budget_amount: number;
            /** @description What succeeded and in-flight payments hold, minor units */
            amount_used: number;
            /** @enum {string} */
            usage: "single_use" | "multi_use";
            /** @description Succeeded and in-flight payments */
            uses_count: number;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            expires_at: string;
            not_before: string | null;
            /**
             * @description Your own key-value pairs: up to 50 keys of at most 40 characters, string values of at most 500 characters.
             * @example {
             *       "order_ref": "A-1001"
             *     }
             */
            metadata: {
                [key: string]: string;
            };
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            updated_at: string;
            revoked_at: string | null;
            ap2: {
                /** @description base64url SHA-256 of the open mandate's issuer-signed JWT; an open mandate makes one mandate per account */
                open_mandate_hash: string;
                /** @description base64url SHA-256 of the open mandate as presented: the `sd_hash` every closed mandate must carry */
                presentation_hash: string;
                /** @description The trusted key that signed the open mandate; revoking it stops payments on this mandate */
                issuer: {
                    trusted_key_id: string;
                    kid: string;
                    /** @enum {string} */
                    role: "trusted_agent_provider" | "user_credential_issuer";
                };
                /** @description The agent's public key (`cnf.jwk`): it must sign every closed mandate */
                cnf_jwk: {
                    [key: string]: string;
                };
                min_amount: number | null;
                recurrence: {
                    /** @description payment.agent_recurrence.frequency */
                    frequency: string;
                    max_occurrences: number | null;
                    window: string | null;
                } | null;
                allowed_payees: ({
                    id: string;
                    name: string;
                    website?: string;
                } & {
                    [key: string]: unknown;
                })[] | null;
                allowed_payment_instruments: ({
                    id: string;
                    type: string;
                    description?: string;
                } & {
                    [key: string]: unknown;
                })[] | null;
                payment_reference: string | null;
                issued_at: string | null;
                last_payment_at: string | null;
            } | null;
        };
        /**
         * Payment
         * @example {
         *       "id": "pay_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "mandate_id": "mdt_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "wish_id": null,
         *       "amount": 4999,
         *       "currency": "USD",
         *       "status": "succeeded",
         *       "protocol_type": "ap2",
         *       "payment_method": "card",
         *       "amount_refunded": 0,
         *       "failure_code": null,
         *       "failure_message": null,
         *       "metadata": {},
         *       "created_at": "2026-11-22T10:00:00.000Z",
         *       "updated_at": "2026-11-22T10:00:00.000Z",
         *       "ap2": null
         *     }
         */
        Payment: {
            /** @example pay_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            mandate_id: string;
            wish_id: string | null;
            /** @description Minor units */
            amount: number;
            currency: string;
            /**
             * @description pending -> processing -> succeeded | failed; succeeded -> refunded when fully refunded
             * @enum {string}
             */
            status: "pending" | "processing" | "succeeded" | "failed" | "refunded";
            /**
             * @description The mandate's protocol
             * @enum {string}
             */
            protocol_type: "ap2" | "acp";
            payment_method: string;
            /** @description Minor units refunded so far */
            amount_refunded: number;
            failure_code: string | null;
            failure_message: string | null;
            /**
             * @description Your own key-value pairs: up to 50 keys of at most 40 characters, string values of at most 500 characters.
             * @example {
             *       "order_ref": "A-1001"
             *     }
             */
            metadata: {
                [key: string]: string;
            };
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            updated_at: string;
            ap2: {
                /** @description base64url SHA-256 of the closed mandate as presented; the receipt's `reference` */
                reference: string;
                /** @description The closed mandate's transaction_id (the checkout it pays) */
                transaction_id: string;
                payee: {
                    id: string;
                    name?: string;
                    type?: string;
                } & {
                    [key: string]: unknown;
                };
                payment_instrument: {
                    id: string;
                    name?: string;
                    type?: string;
                } & {
                    [key: string]: unknown;
                };
            } | null;
        };
        /**
         * Refund
         * @example {
         *       "id": "re_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "payment_id": "pay_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "amount": 1000,
         *       "reason": "requested_by_customer",
         *       "status": "succeeded",
         *       "created_at": "2026-11-22T10:05:00.000Z"
         *     }
         */
        Refund: {
            /** @example re_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            payment_id: string;
            /** @description Minor units */
            amount: number;
            reason: string | null;
            /** @enum {string} */
            status: "succeeded";
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
        };
        /**
         * Event
         * @description Also the body of every webhook delivery.
         * @example {
         *       "id": "evt_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "type": "payment.succeeded",
         *       "created_at": "2026-11-22T10:00:00.000Z",
         *       "data": {
         *         "object": {
         *           "id": "pay_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *           "status": "succeeded",
         *           "amount": 4999,
         *           "currency": "USD"
         *         }
         *       },
         *       "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *     }
         */
        Event: {
            /** @example evt_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            /**
             * @description What happened: <object>.<change>
             * @enum {string}
             */
            type: "wish.created" | "wish.updated" | "wish.deleted" | "mandate.created" | "mandate.revoked" | "mandate.consumed" | "mandate.expired" | "payment.created" | "payment.processing" | "payment.succeeded" | "payment.failed" | "payment.refunded" | "agent.created" | "agent.disabled" | "trusted_key.created" | "trusted_key.revoked";
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
            data: {
                /** @description The wish, mandate or payment as the API returned it right after the change */
                object: {
                    [key: string]: unknown;
                };
            };
            request_id: string | null;
        };
        /**
         * WebhookEndpoint
         * @example {
         *       "id": "we_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "url": "https://example.org/hooks/wishpay",
         *       "events": [
         *         "payment.succeeded",
         *         "payment.failed"
         *       ],
         *       "description": null,
         *       "enabled": true,
         *       "disabled_reason": null,
         *       "created_at": "2026-11-22T10:00:00.000Z",
         *       "updated_at": "2026-11-22T10:00:00.000Z"
         *     }
         */
        WebhookEndpoint: {
            /** @example we_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            url: string;
            events: string[];
            description: string | null;
            /** @description false after a 410 Gone, or when you disable it */
            enabled: boolean;
            disabled_reason: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            updated_at: string;
        };
        /**
         * CreatedWebhookEndpoint
         * @example {
         *       "id": "we_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "url": "https://example.org/hooks/wishpay",
         *       "events": [
         *         "payment.succeeded",
         *         "payment.failed"
         *       ],
         *       "description": null,
         *       "enabled": true,
         *       "disabled_reason": null,
         *       "created_at": "2026-11-22T10:00:00.000Z",
         *       "updated_at": "2026-11-22T10:00:00.000Z",
         *       "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
         *     }
         */
        CreatedWebhookEndpoint: {
            /** @example we_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            url: string;
            events: string[];
            description: string | null;
            /** @description false after a 410 Gone, or when you disable it */
            enabled: boolean;
            disabled_reason: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            updated_at: string;
            /** @description whsec_…: verifies signatures. Shown only in this response. */
            secret: string;
        };
        /**
         * WebhookDeliveryAttempt
         * @example {
         *       "id": "wha_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "event_id": "evt_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "event_type": "payment.succeeded",
         *       "attempt": 1,
         *       "status_code": 503,
         *       "error": null,
         *       "succeeded": false,
         *       "duration_ms": 42,
         *       "next_retry_at": "2026-11-22T10:00:05.000Z",
         *       "created_at": "2026-11-22T10:00:00.000Z"
         *     }
         */
        WebhookDeliveryAttempt: {
            /** @example wha_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            event_id: string;
            event_type: string;
            /** @description 1 for the first try of this event, then 2, 3, … */
            attempt: number;
            status_code: number | null;
            error: string | null;
            /** @description The receiver answered 2xx */
            succeeded: boolean;
            duration_ms: number;
            next_retry_at: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
        };
        /**
         * WebhookDeliveryResend
         * @description A new delivery of the event to the endpoint, scheduled now; its attempt appears in the endpoint's deliveries
         * @example {
         *       "resent": "wha_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "endpoint_id": "we_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "event_id": "evt_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "event_type": "payment.succeeded",
         *       "scheduled_at": "2026-11-22T10:05:00.000Z"
         *     }
         */
        WebhookDeliveryResend: {
            /** @description The delivery attempt (wha_…) whose event is sent again */
            resent: string;
            endpoint_id: string;
            event_id: string;
            event_type: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            scheduled_at: string;
        };
        /**
         * Agent
         * @example {
         *       "id": "agt_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "name": "Shopping assistant",
         *       "status": "active",
         *       "metadata": {},
         *       "public_jwk": null,
         *       "created_at": "2026-11-22T10:00:00.000Z",
         *       "updated_at": "2026-11-22T10:00:00.000Z"
         *     }
         */
        Agent: {
            /** @example agt_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            name: string;
            /**
             * @description active, or disabled (its keys stop working; it can be granted nothing more)
             * @enum {string}
             */
            status: "active" | "disabled";
            /**
             * @description Your own key-value pairs: up to 50 keys of at most 40 characters, string values of at most 500 characters.
             * @example {
             *       "order_ref": "A-1001"
             *     }
             */
            metadata: {
                [key: string]: string;
            };
            public_jwk: {
                /**
                 * @description EC (with crv P-256) or OKP (with crv Ed25519)
                 * @enum {string}
                 */
                kty: "EC" | "OKP";
                /** @enum {string} */
                crv: "P-256" | "Ed25519";
                /** @description base64url public coordinate */
                x: string;
                /** @description base64url public coordinate (EC only) */
                y?: string;
                kid?: string;
                /** @enum {string} */
                alg?: "ES256" | "EdDSA";
                /** @enum {string} */
                use?: "sig";
            } | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            updated_at: string;
        };
        /**
         * TrustedKey
         * @example {
         *       "id": "tk_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "kid": "agent-provider-key-1",
         *       "role": "trusted_agent_provider",
         *       "public_jwk": {
         *         "kty": "EC",
         *         "crv": "P-256",
         *         "kid": "agent-provider-key-1",
         *         "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
         *         "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
         *       },
         *       "status": "active",
         *       "description": "Our shopping agent provider",
         *       "created_at": "2026-11-22T10:00:00.000Z",
         *       "revoked_at": null
         *     }
         */
        TrustedKey: {
            /** @example tk_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            kid: string;
            /**
             * @description trusted_agent_provider or user_credential_issuer (AP2 agent_authorization.md: may sign open mandates), or acp_client (signs ACP delegate_payment requests: then every such request must carry a valid Signature)
             * @enum {string}
             */
            role: "trusted_agent_provider" | "user_credential_issuer" | "acp_client";
            /** @description The public key, public members only */
            public_jwk: {
                kty: string;
                kid: string;
                crv?: string;
                x?: string;
                y?: string;
                n?: string;
                e?: string;
                alg?: string;
                use?: string;
            };
            /**
             * @description active, or revoked (mandates it signs are refused from then on)
             * @enum {string}
             */
            status: "active" | "revoked";
            description: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
            revoked_at: string | null;
        };
        /**
         * Ap2Nonce
         * @example {
         *       "nonce": "q3ZP0d8K4fY7sLx2W9cVb6NmT1hJ5gRa",
         *       "audience": "wishpay:acct_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "agent_id": "agt_01jf3v7k8m2n4p6q8r0s2t4v6w",
         *       "expires_at": "2026-11-22T10:05:00.000Z",
         *       "created_at": "2026-11-22T10:00:00.000Z"
         *     }
         */
        Ap2Nonce: {
            /** @description Put it in the closed Payment Mandate's `nonce`; it pays once */
            nonce: string;
            /** @description Put it in the closed Payment Mandate's `aud`: this account's verifier id */
            audience: string;
            agent_id: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            expires_at: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
        };
        /** VaultToken */
        VaultToken: {
            /** @example vt_01jf3v7k8m2n4p6q8r0s2t4v6w */
            id: string;
            /** @description The single-use mandate of protocol acp the token is: its cap is the allowance */
            mandate_id: string;
            parent_mandate_id: string | null;
            /**
             * @description The mandate's: active, consumed (it paid), revoked or expired
             * @enum {string}
             */
            status: "active" | "revoked" | "expired" | "consumed";
            merchant_id: string;
            checkout_session_id: string;
            allowance: {
                reason: string;
                /** @description Minor units */
                max_amount: number;
                /** @description As ACP sends it: lower case */
                currency: string;
                /**
                 * Format: date-time
                 * @description ISO 8601 UTC timestamp with milliseconds
                 * @example 2026-11-22T10:00:00.000Z
                 */
                expires_at: string;
            };
            /** @description What Wishpay keeps of the card: never the number, the CVC or a cryptogram */
            card: {
                brand: string;
                last4: string | null;
                funding?: string;
                exp_month: string | null;
                exp_year: string | null;
                name: string | null;
                iin: string | null;
                checks_performed: string[];
                card_number_type: string;
                /** @description A keyed hash of the number: equal for the same card, useless without the server's secret */
                fingerprint: string;
            };
            billing_address: {
                [key: string]: string;
            } | null;
            /** @description The delegation request's metadata */
            metadata: {
                [key: string]: string;
            };
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-11-22T10:00:00.000Z
             */
            created_at: string;
        };
        /**
         * Error400
         * @description 400: Invalid request.
         * @example {
         *       "error": {
         *         "type": "invalid_request_error",
         *         "code": "parameter_missing",
         *         "message": "amount is required",
         *         "param": "amount",
         *         "errors": [
         *           {
         *             "param": "amount",
         *             "code": "parameter_missing",
         *             "message": "amount is required"
         *           }
         *         ],
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error400: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "invalid_request_error";
                /** @enum {string} */
                code: "parameter_missing" | "parameter_invalid" | "parameter_unknown" | "invalid_json" | "idempotency_key_mismatch" | "resource_limit_exceeded" | "invalid_url" | "bad_request" | "mandate_malformed" | "resource_missing" | "sandbox_only";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error401
         * @description 401: No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate.
         * @example {
         *       "error": {
         *         "type": "authentication_error",
         *         "code": "authentication_required",
         *         "message": "Authentication required: send your API key as \"Authorization: Bearer <key>\"",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error401: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "authentication_error";
                /** @enum {string} */
                code: "authentication_required" | "invalid_api_key";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error403
         * @description 403: A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do.
         * @example {
         *       "error": {
         *         "type": "permission_error",
         *         "code": "insufficient_scope",
         *         "message": "This API key is read-only (rk_); use a secret key (sk_) to make changes",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error403: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "permission_error";
                /** @enum {string} */
                code: "insufficient_scope";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error404
         * @description 404: No such object in your account.
         * @example {
         *       "error": {
         *         "type": "invalid_request_error",
         *         "code": "resource_missing",
         *         "message": "No such mandate: 'mdt_01jf3v7k8m2n4p6q8r0s2t4v6w'",
         *         "param": "id",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error404: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "invalid_request_error";
                /** @enum {string} */
                code: "resource_missing";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error408
         * @description 408: The request was not received in time (answered on the connection, before any route).
         * @example {
         *       "error": {
         *         "type": "invalid_request_error",
         *         "code": "request_timeout",
         *         "message": "The request was not received in time",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error408: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "invalid_request_error";
                /** @enum {string} */
                code: "request_timeout";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error409
         * @description 409: Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use).
         * @example {
         *       "error": {
         *         "type": "conflict_error",
         *         "code": "idempotency_key_in_use",
         *         "message": "A request with this idempotency key is still being processed; retry after Retry-After seconds",
         *         "param": "idempotency_key",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error409: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "conflict_error";
                /** @enum {string} */
                code: "invalid_state_transition" | "idempotency_key_in_use" | "kid_in_use";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error413
         * @description 413: Request body over 1 MiB.
         * @example {
         *       "error": {
         *         "type": "invalid_request_error",
         *         "code": "payload_too_large",
         *         "message": "Request body is larger than 1048576 bytes",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error413: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "invalid_request_error";
                /** @enum {string} */
                code: "payload_too_large";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error414
         * @description 414: A path segment is longer than any id.
         * @example {
         *       "error": {
         *         "type": "invalid_request_error",
         *         "code": "uri_too_long",
         *         "message": "The request URL has a path segment longer than 1024 characters",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error414: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "invalid_request_error";
                /** @enum {string} */
                code: "uri_too_long";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error415
         * @description 415: A body that is not application/json.
         * @example {
         *       "error": {
         *         "type": "invalid_request_error",
         *         "code": "unsupported_media_type",
         *         "message": "Content-Type must be application/json (got text/plain)",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error415: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "invalid_request_error";
                /** @enum {string} */
                code: "unsupported_media_type";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error417
         * @description 417: An Expect header other than 100-continue (answered on the connection, before any route).
         * @example {
         *       "error": {
         *         "type": "invalid_request_error",
         *         "code": "expectation_failed",
         *         "message": "The only expectation supported is Expect: 100-continue",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error417: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "invalid_request_error";
                /** @enum {string} */
                code: "expectation_failed";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error422
         * @description 422: Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error).
         * @example {
         *       "error": {
         *         "type": "payment_error",
         *         "code": "mandate_budget_exceeded",
         *         "message": "amount exceeds what is left of the mandate's budget (1000)",
         *         "param": "amount",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error422: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "idempotency_error" | "payment_error";
                /** @enum {string} */
                code: "idempotency_key_reused" | "mandate_not_found" | "mandate_revoked" | "mandate_expired" | "mandate_not_yet_valid" | "mandate_consumed" | "currency_mismatch" | "amount_exceeds_mandate" | "mandate_budget_exceeded" | "constraint_unsatisfied" | "ap2_mandate_required" | "vault_token_not_found" | "vault_token_merchant_mismatch" | "vault_token_session_mismatch" | "wish_not_usable" | "protocol_mismatch" | "wish_budget_exceeded" | "agent_not_usable" | "payment_not_refundable" | "refund_exceeds_payment" | "issuer_untrusted" | "mandate_signature_invalid" | "disclosure_invalid" | "mandate_type_unsupported" | "cnf_invalid" | "constraint_unsupported" | "constraint_invalid" | "mandate_unbounded" | "mandate_chain_invalid" | "audience_invalid" | "payment_amount_mismatch" | "mandate_replayed" | "nonce_invalid";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error429
         * @description 429: Too many requests with this key; retry after Retry-After seconds.
         * @example {
         *       "error": {
         *         "type": "rate_limit_error",
         *         "code": "rate_limited",
         *         "message": "Too many requests with this API key; retry after 1 s",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error429: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "rate_limit_error";
                /** @enum {string} */
                code: "rate_limited";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error431
         * @description 431: Request line and headers too large (answered on the connection, before any route).
         * @example {
         *       "error": {
         *         "type": "invalid_request_error",
         *         "code": "request_header_fields_too_large",
         *         "message": "The request line and headers together are larger than 16384 bytes",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error431: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "invalid_request_error";
                /** @enum {string} */
                code: "request_header_fields_too_large";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error500
         * @description 500: Internal error; nothing about it is disclosed.
         * @example {
         *       "error": {
         *         "type": "api_error",
         *         "code": "internal_error",
         *         "message": "An internal error occurred; it has been logged",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error500: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "api_error";
                /** @enum {string} */
                code: "internal_error";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
        /**
         * Error503
         * @description 503: The database is unreachable or the server is shutting down; retry after Retry-After seconds.
         * @example {
         *       "error": {
         *         "type": "api_error",
         *         "code": "service_unavailable",
         *         "message": "The service is temporarily unavailable; retry later",
         *         "request_id": "req_01jf3v7k8m2n4p6q8r0s2t4v6w"
         *       }
         *     }
         */
        Error503: components["schemas"]["Error"] & ({
            error: {
                /** @enum {string} */
                type: "api_error";
                /** @enum {string} */
                code: "service_unavailable";
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        });
    };
    responses: never;
    parameters: {
        /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
        IdempotencyKey: string;
    };
    requestBodies: never;
    headers: {
        /** @description This request's id; the same as `request_id` in an error body and in the server's log line. */
        "Request-Id": string;
        /** @description The version of the API that answered. */
        "API-Version": "2026-11-01.beta";
        /** @description Present, `true`, when this is the saved answer to an earlier request with the same idempotency key. */
        "Idempotent-Replayed": "true";
        /** @description Seconds to wait before retrying. */
        "Retry-After": number;
        /** @description What is left of this key's limit in the current window (IETF draft "RateLimit header fields"). */
        RateLimit: string;
        /** @description This key's limit: q requests per w seconds (RATE_LIMIT_PER_SECOND). */
        "RateLimit-Policy": string;
        /** @description The scheme to authenticate with: Bearer. */
        "WWW-Authenticate": string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getOpenApi: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The OpenAPI document */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "openapi": "3.1.0",
                     *       "info": {
                     *         "title": "Wishpay API",
                     *         "version": "2026-11-01.beta"
                     *       },
                     *       "paths": {}
                     *     }
                     */
                    "application/json": {
                        [key: string]: unknown;
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus exposition text */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description METRICS_TOKEN is set and was not sent */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "status": "ok"
                     *     }
                     */
                    "application/json": {
                        /** @enum {string} */
                        status: "ok";
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "status": "ok"
                     *     }
                     */
                    "application/json": {
                        /** @enum {string} */
                        status: "ok";
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getJwks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Wishpay's public keys (RFC 7517 JWK Set) */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "keys": [
                     *         {
                     *           "kty": "EC",
                     *           "crv": "P-256",
                     *           "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                     *           "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
                     *           "kid": "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
                     *           "alg": "ES256",
                     *           "use": "sig"
                     *         }
                     *       ]
                     *     }
                     */
                    "application/json": {
                        /** @description Active keys, and keys retired less than 30 days ago */
                        keys: {
                            /** @description EC */
                            kty: string;
                            /** @description P-256 */
                            crv: string;
                            x: string;
                            y: string;
                            /** @description The JWK thumbprint (RFC 7638, SHA-256); a receipt's JWT header names it */
                            kid: string;
                            /** @enum {string} */
                            alg: "ES256";
                            /** @enum {string} */
                            use: "sig";
                        }[];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getAcpDiscovery: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The discovery document */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        protocol: {
                            /** @enum {string} */
                            name: "acp";
                            version: string;
                            supported_versions: string[];
                            /** Format: uri */
                            documentation_url?: string;
                        };
                        /** Format: uri */
                        api_base_url: string;
                        transports: ("rest" | "mcp")[];
                        capabilities: {
                            services: ("checkout" | "orders" | "delegate_payment" | "carts")[];
                            extensions?: {
                                name: string;
                                /** Format: uri */
                                spec?: string;
                                /** Format: uri */
                                schema?: string;
                            }[];
                            intervention_types?: ("3ds" | "biometric" | "address_verification")[];
                            supported_currencies?: string[];
                            supported_locales?: string[];
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    listWishes: {
        parameters: {
            query?: {
                /** @description Items per page, 1..100 in plain digits (default 10) */
                limit?: number;
                /** @description Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor */
                offset?: number;
                /** @description Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. Filters apply as usual; the cursor object need not match them */
                starting_after?: string;
                /** @description Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. Same rules as starting_after */
                ending_before?: string;
                /** @description active, pending, fulfilled, cancelled or expired */
                status?: "active" | "pending" | "fulfilled" | "cancelled" | "expired";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of wishes */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Wish"][];
                        meta: {
                            /** @description Count of all items matching the filter */
                            total: number;
                            /** @description The page size applied */
                            limit: number;
                            /** @description The offset applied (0 with a cursor) */
                            offset: number;
                            /** @description Whether more items follow in the direction of travel: after this page for offsets and starting_after (send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>) */
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    createWish: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "query": "Noise-cancelling headphones under $200",
                 *       "budget": {
                 *         "max": 199.99,
                 *         "currency": "usd"
                 *       },
                 *       "protocol": "auto",
                 *       "category": "electronics",
                 *       "metadata": {
                 *         "order_ref": "A-1001"
                 *       }
                 *     }
                 */
                "application/json": {
                    /** @description What to obtain, in plain words; trimmed, 1..2000 characters */
                    query: string;
                    budget?: {
                        /** @description Maximum to spend, in major units (199.99); no more decimals than the currency has */
                        max?: number;
                        /**
                         * Format: currency
                         * @description ISO 4217 code, any case; returned upper-case. Default USD.
                         * @example USD
                         */
                        currency?: string;
                    } | null;
                    /**
                     * @description ap2, acp, or auto (the default protocol)
                     * @default auto
                     * @enum {string}
                     */
                    protocol?: "ap2" | "acp" | "auto";
                    category?: string | null;
                    /**
                     * @description Your own key-value pairs: up to 50 keys of at most 40 characters, string values of at most 500 characters.
                     * @example {
                     *       "order_ref": "A-1001"
                     *     }
                     */
                    metadata?: {
                        [key: string]: string;
                    };
                    expires_at?: string | null;
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The new wish */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Wish"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getWish: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The wish */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Wish"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    updateWish: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "status": "pending",
                 *       "metadata": {
                 *         "order_ref": null,
                 *         "agent": "shopper-7"
                 *       }
                 *     }
                 */
                "application/json": {
                    /** @description What to obtain, in plain words; trimmed, 1..2000 characters */
                    query?: string;
                    budget?: {
                        /** @description Maximum to spend, in major units (199.99); no more decimals than the currency has */
                        max?: number;
                        /**
                         * Format: currency
                         * @description ISO 4217 code, any case; returned upper-case. Default USD.
                         * @example USD
                         */
                        currency?: string;
                    } | null;
                    /**
                     * @description active, pending, fulfilled, cancelled or expired
                     * @enum {string}
                     */
                    status?: "active" | "pending" | "fulfilled" | "cancelled" | "expired";
                    metadata?: {
                        [key: string]: string | null;
                    } | null;
                    category?: string | null;
                    expires_at?: string | null;
                    agent_id?: string | null;
                };
            };
        };
        responses: {
            /** @description The wish after the update */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Wish"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    deleteWish: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted; no body */
            204: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    listMandates: {
        parameters: {
            query?: {
                /** @description Items per page, 1..100 in plain digits (default 10) */
                limit?: number;
                /** @description Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor */
                offset?: number;
                /** @description Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. Filters apply as usual; the cursor object need not match them */
                starting_after?: string;
                /** @description Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. Same rules as starting_after */
                ending_before?: string;
                status?: "active" | "revoked" | "expired" | "consumed";
                wish_id?: string;
                agent_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of mandates */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Mandate"][];
                        meta: {
                            /** @description Count of all items matching the filter */
                            total: number;
                            /** @description The page size applied */
                            limit: number;
                            /** @description The offset applied (0 with a cursor) */
                            offset: number;
                            /** @description Whether more items follow in the direction of travel: after this page for offsets and starting_after (send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>) */
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    createMandate: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "protocol": "ap2",
                 *       "max_amount": 5000,
                 *       "budget_amount": 15000,
                 *       "usage": "multi_use",
                 *       "expires_at": "2099-12-31T23:59:59.000Z"
                 *     }
                 */
                "application/json": {
                    /**
                     * @description ap2 or acp; must equal the wish's when wish_id is given; ap2 with `ap2.open_payment_mandate`
                     * @enum {string}
                     */
                    protocol: "ap2" | "acp";
                    /**
                     * @description Cap on each payment, in minor units. Required, unless `ap2.open_payment_mandate` gives it
                     * @example 5000
                     */
                    max_amount?: number;
                    /**
                     * @description Cap on the sum of all payments, in minor units; default max_amount
                     * @example 5000
                     */
                    budget_amount?: number;
                    /**
                     * Format: currency
                     * @description ISO 4217, any case; default the wish's budget currency, else USD
                     * @example USD
                     */
                    currency?: string;
                    /**
                     * @description single_use (the default) pays once; multi_use pays until the budget is spent
                     * @enum {string}
                     */
                    usage?: "single_use" | "multi_use";
                    /** @description The wish this mandate serves */
                    wish_id?: string;
                    /** @description The agent granted this mandate (active, of this account, else 422 `agent_not_usable`): agent keys (`ak_`) of other agents may not pay with it; the account's `sk_` keys may */
                    agent_id?: string;
                    /**
                     * Format: date-time
                     * @description When the mandate lapses; must be in the future. Required, unless `ap2.open_payment_mandate` gives it
                     */
                    expires_at?: string;
                    not_before?: string | null;
                    /**
                     * @description Your own key-value pairs: up to 50 keys of at most 40 characters, string values of at most 500 characters.
                     * @example {
                     *       "order_ref": "A-1001"
                     *     }
                     */
                    metadata?: {
                        [key: string]: string;
                    };
                    /** @description Make the mandate from an AP2 open Payment Mandate; payments on it then need `ap2.payment_mandate` */
                    ap2?: {
                        /** @description An AP2 v0.2 open Payment Mandate (`vct` mandate.payment.open.1): the compact SD-JWT with its disclosures (`jwt~d1~…~dn~`), signed by a trusted key of this account (POST /trusted_keys). Its constraints become the mandate's terms, so `max_amount`, `budget_amount`, `currency`, `usage`, `expires_at` and `not_before` may not be sent with it */
                        open_payment_mandate: string;
                    };
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The new mandate */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Mandate"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getMandate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The mandate */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Mandate"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    revokeMandate: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "idempotency_key": "example-revoke-9d4b27e1"
                 *     }
                 */
                "application/json": {
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The revoked mandate */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Mandate"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    listPayments: {
        parameters: {
            query?: {
                /** @description Items per page, 1..100 in plain digits (default 10) */
                limit?: number;
                /** @description Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor */
                offset?: number;
                /** @description Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. Filters apply as usual; the cursor object need not match them */
                starting_after?: string;
                /** @description Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. Same rules as starting_after */
                ending_before?: string;
                status?: "pending" | "processing" | "succeeded" | "failed" | "refunded";
                mandate_id?: string;
                wish_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of payments */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Payment"][];
                        meta: {
                            /** @description Count of all items matching the filter */
                            total: number;
                            /** @description The page size applied */
                            limit: number;
                            /** @description The offset applied (0 with a cursor) */
                            offset: number;
                            /** @description Whether more items follow in the direction of travel: after this page for offsets and starting_after (send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>) */
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    createPayment: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "mandate_id": "mdt_01jf3v7k8m2n4p6q8r0s2t4v6w",
                 *       "amount": 4999,
                 *       "currency": "USD",
                 *       "payment_method": "card",
                 *       "idempotency_key": "example-payment-6c1e0b7d"
                 *     }
                 */
                "application/json": {
                    /** @description The mandate that authorises the payment. Required, unless `vault_token` is sent */
                    mandate_id?: string;
                    /** @description An ACP vault token (`vt_…`, POST /agentic_commerce/delegate_payment) instead of `mandate_id`: the payment is within its allowance, for its merchant and checkout session, once. Needs `merchant_id` and `checkout_session_id` */
                    vault_token?: string;
                    /** @description With `vault_token`: the merchant it was delegated to */
                    merchant_id?: string;
                    /** @description With `vault_token`: the checkout session it was delegated for */
                    checkout_session_id?: string;
                    /**
                     * @description Amount in minor units, 1..10^12
                     * @example 5000
                     */
                    amount: number;
                    /**
                     * Format: currency
                     * @description ISO 4217, any case; default USD; must be the mandate's
                     * @default USD
                     * @example USD
                     */
                    currency?: string;
                    /**
                     * @description Sandbox: card, wallet (succeed), test_card_declined, test_insufficient_funds (fail), bank_transfer, test_bank_transfer_failed (settle later). Default card.
                     * @default card
                     */
                    payment_method?: string;
                    /**
                     * @description Your own key-value pairs: up to 50 keys of at most 40 characters, string values of at most 500 characters.
                     * @example {
                     *       "order_ref": "A-1001"
                     *     }
                     */
                    metadata?: {
                        [key: string]: string;
                    };
                    /** @description Required on a mandate made from an AP2 open mandate (else 422 `ap2_mandate_required`) */
                    ap2?: {
                        /** @description The AP2 v0.2 closed Payment Mandate (`vct` mandate.payment.1, a kb+sd-jwt `jwt~disclosures~`), or the chain `open~~closed`: signed with the open mandate's `cnf` key, `sd_hash` the open mandate's, `aud` and `nonce` from POST /ap2/nonces, `payment_amount` this request's amount and currency, payee and instrument allowed by the open mandate. It pays once */
                        payment_mandate: string;
                    };
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The payment */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Payment"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getPayment: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The payment */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Payment"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    listRefunds: {
        parameters: {
            query?: {
                /** @description Items per page, 1..100 in plain digits (default 10) */
                limit?: number;
                /** @description Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor */
                offset?: number;
                /** @description Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. Filters apply as usual; the cursor object need not match them */
                starting_after?: string;
                /** @description Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. Same rules as starting_after */
                ending_before?: string;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of refunds */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Refund"][];
                        meta: {
                            /** @description Count of all items matching the filter */
                            total: number;
                            /** @description The page size applied */
                            limit: number;
                            /** @description The offset applied (0 with a cursor) */
                            offset: number;
                            /** @description Whether more items follow in the direction of travel: after this page for offsets and starting_after (send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>) */
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    createRefund: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "amount": 1000,
                 *       "reason": "requested_by_customer",
                 *       "idempotency_key": "example-refund-3a9f52c4"
                 *     }
                 */
                "application/json": {
                    /**
                     * @description Minor units to refund; default what remains
                     * @example 5000
                     */
                    amount?: number;
                    /** @description Why, in your words */
                    reason?: string;
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The refund */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Refund"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    settlePayment: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "idempotency_key": "example-settle-5c2e81d0"
                 *     }
                 */
                "application/json": {
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The settled payment */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Payment"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    streamEvents: {
        parameters: {
            query?: {
                /**
                 * @description Resume after this event id, for clients that cannot send Last-Event-ID (the header wins when both are sent)
                 * @example evt_01jf3v7k8m2n4p6q8r0s2t4v6w
                 */
                starting_after?: string;
                /**
                 * @description Only these event types, separated by commas; all when absent
                 * @example payment.succeeded,payment.failed
                 */
                types?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A stream of server-sent events that stays open; one message per event */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    listEvents: {
        parameters: {
            query?: {
                /** @description Items per page, 1..100 in plain digits (default 10) */
                limit?: number;
                /** @description Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor */
                offset?: number;
                /** @description Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. Filters apply as usual; the cursor object need not match them */
                starting_after?: string;
                /** @description Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. Same rules as starting_after */
                ending_before?: string;
                /** @description What happened: <object>.<change> */
                type?: "wish.created" | "wish.updated" | "wish.deleted" | "mandate.created" | "mandate.revoked" | "mandate.consumed" | "mandate.expired" | "payment.created" | "payment.processing" | "payment.succeeded" | "payment.failed" | "payment.refunded" | "agent.created" | "agent.disabled" | "trusted_key.created" | "trusted_key.revoked";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of events */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Event"][];
                        meta: {
                            /** @description Count of all items matching the filter */
                            total: number;
                            /** @description The page size applied */
                            limit: number;
                            /** @description The offset applied (0 with a cursor) */
                            offset: number;
                            /** @description Whether more items follow in the direction of travel: after this page for offsets and starting_after (send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>) */
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getEvent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Event"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    listWebhookEndpoints: {
        parameters: {
            query?: {
                /** @description Items per page, 1..100 in plain digits (default 10) */
                limit?: number;
                /** @description Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor */
                offset?: number;
                /** @description Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. Filters apply as usual; the cursor object need not match them */
                starting_after?: string;
                /** @description Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. Same rules as starting_after */
                ending_before?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of webhook endpoints */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["WebhookEndpoint"][];
                        meta: {
                            /** @description Count of all items matching the filter */
                            total: number;
                            /** @description The page size applied */
                            limit: number;
                            /** @description The offset applied (0 with a cursor) */
                            offset: number;
                            /** @description Whether more items follow in the direction of travel: after this page for offsets and starting_after (send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>) */
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    createWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "url": "https://example.org/hooks/wishpay",
                 *       "events": [
                 *         "payment.succeeded",
                 *         "payment.failed"
                 *       ]
                 *     }
                 */
                "application/json": {
                    /**
                     * @description http(s) URL; private, loopback and link-local targets are refused
                     * @example https://example.org/hooks/wishpay
                     */
                    url: string;
                    /**
                     * @description Event types to receive, or ["*"] for all
                     * @example [
                     *       "payment.succeeded",
                     *       "payment.failed"
                     *     ]
                     */
                    events: ("wish.created" | "wish.updated" | "wish.deleted" | "mandate.created" | "mandate.revoked" | "mandate.consumed" | "mandate.expired" | "payment.created" | "payment.processing" | "payment.succeeded" | "payment.failed" | "payment.refunded" | "agent.created" | "agent.disabled" | "trusted_key.created" | "trusted_key.revoked" | "*")[];
                    description?: string | null;
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The endpoint, with its secret */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["CreatedWebhookEndpoint"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint (without its secret) */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["WebhookEndpoint"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    updateWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "enabled": true,
                 *       "events": [
                 *         "*"
                 *       ]
                 *     }
                 */
                "application/json": {
                    /**
                     * @description http(s) URL; private, loopback and link-local targets are refused
                     * @example https://example.org/hooks/wishpay
                     */
                    url?: string;
                    /**
                     * @description Event types to receive, or ["*"] for all
                     * @example [
                     *       "payment.succeeded",
                     *       "payment.failed"
                     *     ]
                     */
                    events?: ("wish.created" | "wish.updated" | "wish.deleted" | "mandate.created" | "mandate.revoked" | "mandate.consumed" | "mandate.expired" | "payment.created" | "payment.processing" | "payment.succeeded" | "payment.failed" | "payment.refunded" | "agent.created" | "agent.disabled" | "trusted_key.created" | "trusted_key.revoked" | "*")[];
                    /** @description true re-enables an endpoint that was disabled */
                    enabled?: boolean;
                    description?: string | null;
                };
            };
        };
        responses: {
            /** @description The endpoint after the update */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["WebhookEndpoint"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    deleteWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted; no body */
            204: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                /** @description Items per page, 1..100 in plain digits (default 10) */
                limit?: number;
                /** @description Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor */
                offset?: number;
                /** @description Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. Filters apply as usual; the cursor object need not match them */
                starting_after?: string;
                /** @description Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. Same rules as starting_after */
                ending_before?: string;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Delivery attempts, newest first */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["WebhookDeliveryAttempt"][];
                        meta: {
                            /** @description Count of all items matching the filter */
                            total: number;
                            /** @description The page size applied */
                            limit: number;
                            /** @description The offset applied (0 with a cursor) */
                            offset: number;
                            /** @description Whether more items follow in the direction of travel: after this page for offsets and starting_after (send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>) */
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    resendWebhookDelivery: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "idempotency_key": "example-resend-5c1e9a04"
                 *     }
                 */
                "application/json": {
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The delivery, scheduled */
            202: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["WebhookDeliveryResend"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    listAgents: {
        parameters: {
            query?: {
                /** @description Items per page, 1..100 in plain digits (default 10) */
                limit?: number;
                /** @description Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor */
                offset?: number;
                /** @description Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. Filters apply as usual; the cursor object need not match them */
                starting_after?: string;
                /** @description Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. Same rules as starting_after */
                ending_before?: string;
                status?: "active" | "disabled";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of agents */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Agent"][];
                        meta: {
                            /** @description Count of all items matching the filter */
                            total: number;
                            /** @description The page size applied */
                            limit: number;
                            /** @description The offset applied (0 with a cursor) */
                            offset: number;
                            /** @description Whether more items follow in the direction of travel: after this page for offsets and starting_after (send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>) */
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    createAgent: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "name": "Shopping assistant"
                 *     }
                 */
                "application/json": {
                    /** @description What people call the agent */
                    name: string;
                    /**
                     * @description Your own key-value pairs: up to 50 keys of at most 40 characters, string values of at most 500 characters.
                     * @example {
                     *       "order_ref": "A-1001"
                     *     }
                     */
                    metadata?: {
                        [key: string]: string;
                    };
                    /**
                     * @description The agent's public key, which an AP2 mandate's `cnf` names: EC P-256 or OKP Ed25519, public members only
                     * @example {
                     *       "kty": "EC",
                     *       "crv": "P-256",
                     *       "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                     *       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
                     *     }
                     */
                    public_jwk?: {
                        /**
                         * @description EC (with crv P-256) or OKP (with crv Ed25519)
                         * @enum {string}
                         */
                        kty: "EC" | "OKP";
                        /** @enum {string} */
                        crv: "P-256" | "Ed25519";
                        /** @description base64url public coordinate */
                        x: string;
                        /** @description base64url public coordinate (EC only) */
                        y?: string;
                        kid?: string;
                        /** @enum {string} */
                        alg?: "ES256" | "EdDSA";
                        /** @enum {string} */
                        use?: "sig";
                    };
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The new agent */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Agent"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getAgent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The agent */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Agent"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    disableAgent: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /** @example {} */
                "application/json": {
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The disabled agent */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Agent"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    createAgentKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /** @example {} */
                "application/json": {
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The key, with its secret */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description A new agent key */
                        data: {
                            /** @example key_01jf3v7k8m2n4p6q8r0s2t4v6w */
                            id: string;
                            /** @description The secret (ak_…): shown only here */
                            key: string;
                            account_id: string;
                            /** @enum {string} */
                            scope: "agent";
                            agent_id: string;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    listTrustedKeys: {
        parameters: {
            query?: {
                /** @description Items per page, 1..100 in plain digits (default 10) */
                limit?: number;
                /** @description Items to skip, 0..1000000000 in plain digits (default 0). Not with a cursor (400 parameter_invalid): a cursor page starts at its cursor */
                offset?: number;
                /** @description Cursor: the id of an object of this list (usually the last of the page you have); answers the objects that follow it, older ones, newest first, as fast at any depth. Not with ending_before or an offset (400 parameter_invalid); an id that is not an object of this list (an id of another account included) is 400 resource_missing. Filters apply as usual; the cursor object need not match them */
                starting_after?: string;
                /** @description Cursor: the id of an object of this list (usually the first of the page you have); answers the objects just before it, newer ones, still newest first, to page backwards. Same rules as starting_after */
                ending_before?: string;
                status?: "active" | "revoked";
                role?: "trusted_agent_provider" | "user_credential_issuer" | "acp_client";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of trusted keys */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["TrustedKey"][];
                        meta: {
                            /** @description Count of all items matching the filter */
                            total: number;
                            /** @description The page size applied */
                            limit: number;
                            /** @description The offset applied (0 with a cursor) */
                            offset: number;
                            /** @description Whether more items follow in the direction of travel: after this page for offsets and starting_after (send starting_after=<last id> for them), before it for ending_before (send ending_before=<first id>) */
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    createTrustedKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "role": "trusted_agent_provider",
                 *       "public_jwk": {
                 *         "kty": "EC",
                 *         "crv": "P-256",
                 *         "kid": "agent-provider-key-1",
                 *         "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                 *         "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
                 *       }
                 *     }
                 */
                "application/json": {
                    /**
                     * @description A public JWK with a kid. Private members (d, p, q, dp, dq, qi) are a 400.
                     * @example {
                     *       "kty": "EC",
                     *       "crv": "P-256",
                     *       "kid": "agent-provider-key-1",
                     *       "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                     *       "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
                     *     }
                     */
                    public_jwk: {
                        /** @description EC (crv P-256, ES256), OKP (crv Ed25519, EdDSA) or RSA (2048 bits or more, RS256/PS256) */
                        kty: string;
                        /** @description The key id a mandate's JWT header names; unique in the account */
                        kid: string;
                        /** @description P-256 (EC) or Ed25519 (OKP) */
                        crv?: string;
                        /** @description base64url coordinate (EC, OKP) */
                        x?: string;
                        /** @description base64url coordinate (EC) */
                        y?: string;
                        /** @description base64url modulus (RSA) */
                        n?: string;
                        /** @description base64url exponent (RSA) */
                        e?: string;
                        /** @description ES256, EdDSA, RS256 or PS256; must fit the key */
                        alg?: string;
                        /** @enum {string} */
                        use?: "sig";
                        /** @description refused: a private key member */
                        d?: string;
                        /** @description refused: a private key member */
                        p?: string;
                        /** @description refused: a private key member */
                        q?: string;
                        /** @description refused: a private key member */
                        dp?: string;
                        /** @description refused: a private key member */
                        dq?: string;
                        /** @description refused: a private key member */
                        qi?: string;
                    };
                    /** @enum {string} */
                    role: "trusted_agent_provider" | "user_credential_issuer" | "acp_client";
                    description?: string;
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The trusted key */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["TrustedKey"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getTrustedKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The trusted key */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["TrustedKey"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    revokeTrustedKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /** @example {} */
                "application/json": {
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The revoked key */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["TrustedKey"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    createAp2Nonce: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: {
            content: {
                /** @example {} */
                "application/json": {
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The nonce */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Ap2Nonce"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    getVaultToken: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The vault token */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["VaultToken"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    revokeVaultToken: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry; the same as the body member `idempotency_key` (when both are sent they must be equal). 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Required on payment operations unless the body carries it. */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                /** @example {} */
                "application/json": {
                    /** @description Makes the request safe to retry: 1..255 printable ASCII characters, kept IDEMPOTENCY_TTL_SECONDS (24 h by default). Same as the Idempotency-Key header. */
                    idempotency_key?: string;
                };
            };
        };
        responses: {
            /** @description The revoked vault token */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["VaultToken"];
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description Request body over 1 MiB. Codes: payload_too_large. */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error413"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description A body that is not application/json. Codes: unsupported_media_type. */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error415"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Refused: the idempotency key was used for another request (idempotency_error), or a mandate or payment rule, or an AP2 mandate that does not verify (payment_error). Codes: idempotency_key_reused, mandate_not_found, mandate_revoked, mandate_expired, mandate_not_yet_valid, mandate_consumed, currency_mismatch, amount_exceeds_mandate, mandate_budget_exceeded, constraint_unsatisfied, ap2_mandate_required, vault_token_not_found, vault_token_merchant_mismatch, vault_token_session_mismatch, wish_not_usable, protocol_mismatch, wish_budget_exceeded, agent_not_usable, payment_not_refundable, refund_exceeds_payment, issuer_untrusted, mandate_signature_invalid, disclosure_invalid, mandate_type_unsupported, cnf_invalid, constraint_unsupported, constraint_invalid, mandate_unbounded, mandate_chain_invalid, audience_invalid, payment_amount_mismatch, mandate_replayed, nonce_invalid. */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error422"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
    delegatePayment: {
        parameters: {
            query?: never;
            header: {
                /** @description The protocol version: 2026-04-17 (else 400 missing_api_version or unsupported_api_version, with supported_versions). */
                "API-Version": "2026-04-17";
                /** @description Required (else 400 idempotency_key_required); scoped to this path; the same body replays the first answer, another is 422 idempotency_conflict, one still running 409 idempotency_in_flight. */
                "Idempotency-Key": string;
            };
            path?: never;
            cookie?: never;
        };
        /** @description Request to tokenize a payment method for delegated use by a merchant */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "payment_method": {
                 *         "type": "card",
                 *         "card_number_type": "fpan",
                 *         "virtual": false,
                 *         "number": "4242424242424242",
                 *         "exp_month": "11",
                 *         "exp_year": "2099",
                 *         "name": "Jane Doe",
                 *         "cvc": "223",
                 *         "checks_performed": [
                 *           "avs",
                 *           "cvv"
                 *         ],
                 *         "iin": "424242",
                 *         "display_card_funding_type": "credit",
                 *         "display_wallet_type": "apple_pay",
                 *         "display_brand": "visa",
                 *         "display_last4": "4242",
                 *         "metadata": {
                 *           "issuing_bank": "temp"
                 *         }
                 *       },
                 *       "allowance": {
                 *         "reason": "one_time",
                 *         "max_amount": 2000,
                 *         "currency": "usd",
                 *         "checkout_session_id": "csn_01HV3P3XYZ9ABC",
                 *         "merchant_id": "acme_store",
                 *         "expires_at": "2099-10-09T07:20:50.520Z"
                 *       },
                 *       "billing_address": {
                 *         "name": "Ada Lovelace",
                 *         "line_one": "1234 Chat Road",
                 *         "line_two": "",
                 *         "city": "San Francisco",
                 *         "state": "CA",
                 *         "country": "US",
                 *         "postal_code": "94131"
                 *       },
                 *       "risk_signals": [
                 *         {
                 *           "type": "card_testing",
                 *           "score": 10,
                 *           "action": "manual_review"
                 *         }
                 *       ],
                 *       "metadata": {
                 *         "campaign": "q4",
                 *         "source": "chatgpt_checkout"
                 *       }
                 *     }
                 */
                "application/json": {
                    /**
                     * AcpPaymentMethodCard
                     * @description Card payment method details including card number, expiration, and verification data
                     */
                    payment_method: {
                        /**
                         * @description Payment method type, always 'card'
                         * @enum {string}
                         */
                        type: "card";
                        /**
                         * @description Whether the number is a raw card number (fpan) or a network token
                         * @enum {string}
                         */
                        card_number_type: "fpan" | "network_token";
                        /** @description network token or fallback fpan value */
                        number: string;
                        /** @description Two-digit expiration month (01-12) */
                        exp_month?: string;
                        /** @description Four-digit expiration year (e.g., 2026) */
                        exp_year?: string;
                        /** @description Cardholder name as it appears on the card */
                        name?: string;
                        /** @description Card verification code (3 or 4 digits) */
                        cvc?: string;
                        /** @description Dynamic cryptogram for tokenized card transactions */
                        cryptogram?: string;
                        /** @description Electronic Commerce Indicator for 3DS authentication status */
                        eci_value?: string;
                        /** @description List of verification checks performed on the card */
                        checks_performed?: ("avs" | "cvv" | "ani" | "auth0")[];
                        /** @description Issuer Identification Number (first 6 digits of card) */
                        iin?: string;
                        /**
                         * @description Card funding type for display purposes
                         * @enum {string}
                         */
                        display_card_funding_type: "credit" | "debit" | "prepaid";
                        /** @description Digital wallet provider if card is from a wallet (e.g., Apple Pay, Google Pay) */
                        display_wallet_type?: string;
                        /** @description Card brand for display purposes (e.g., visa, mastercard) */
                        display_brand?: string;
                        /** @description Last 4 digits of card number for display purposes */
                        display_last4?: string;
                        /** @description Additional metadata about the payment method */
                        metadata: {
                            [key: string]: string;
                        };
                        /** @description Whether this is a virtual card number */
                        virtual?: boolean;
                    };
                    /**
                     * AcpAllowance
                     * @description Constraints on how the delegated payment method can be used (amount limit, expiration, merchant)
                     */
                    allowance: {
                        /**
                         * @description Usage pattern for this allowance; currently only one_time is supported
                         * @enum {string}
                         */
                        reason: "one_time";
                        /** @description Maximum charge amount in minor units (e.g. 100 cents for $1.00 or 100 for ¥100) */
                        max_amount: number;
                        /** @description ISO-4217 three-letter lowercase currency code (e.g., usd) */
                        currency: string;
                        /** @description Identifier of the checkout session this payment is for */
                        checkout_session_id: string;
                        /** @description Unique identifier for the merchant authorized to use this token */
                        merchant_id: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 timestamp when this allowance expires
                         */
                        expires_at: string;
                    };
                    /**
                     * AcpAddress
                     * @description Physical address for billing or shipping purposes
                     */
                    billing_address?: {
                        /** @description Full name of the person at this address */
                        name: string;
                        /** @description Street address line 1 (e.g., street and number) */
                        line_one: string;
                        /** @description Street address line 2 (e.g., apartment, suite, unit) */
                        line_two?: string;
                        /** @description City or locality */
                        city: string;
                        /** @description State, province, or region */
                        state: string;
                        /** @description ISO-3166-1 alpha-2 country code */
                        country: string;
                        /** @description ZIP or postal code */
                        postal_code: string;
                    };
                    /** @description List of risk assessment signals from fraud detection */
                    risk_signals: {
                        /**
                         * @description Type of risk signal detected
                         * @enum {string}
                         */
                        type: "card_testing";
                        /** @description Risk score indicating severity level */
                        score: number;
                        /**
                         * @description Recommended action based on risk assessment
                         * @enum {string}
                         */
                        action: "blocked" | "manual_review" | "authorized";
                    }[];
                    /** @description Additional metadata for the request */
                    metadata: {
                        [key: string]: string;
                    };
                };
            };
        };
        responses: {
            /** @description The vault token */
            201: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "id": "vt_01J8Z3WXYZ9ABC",
                     *       "created": "2026-04-17T12:00:00.000Z",
                     *       "metadata": {
                     *         "campaign": "q4",
                     *         "source": "chatgpt_checkout",
                     *         "merchant_id": "acme_store",
                     *         "idempotency_key": "0b7c9a2e-5f4d-4e1a-9c3b-8d2f6a1e7b90"
                     *       }
                     *     }
                     */
                    "application/json": {
                        /** @description Unique vault token identifier (vt_...) */
                        id: string;
                        /**
                         * Format: date-time
                         * @description ISO 8601 timestamp when the token was created
                         */
                        created: string;
                        /** @description Metadata echoed from the request plus system-added fields */
                        metadata: {
                            [key: string]: string;
                        };
                    };
                };
            };
            /** @description Invalid request, a missing Idempotency-Key (idempotency_key_required) or API-Version (missing_api_version, unsupported_api_version, with supported_versions) */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
            /** @description Unauthorized, or a refused request signature */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
            /** @description The key may not delegate payments (a read or agent key) */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description idempotency_in_flight: the first request with this key is still running; retry after Retry-After */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
            /** @description The body is too large */
            413: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description A card or allowance refused on its meaning (invalid_card, invalid_allowance, invalid_parent_mandate), or idempotency_conflict */
            422: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
            /** @description rate_limit_exceeded */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description processing_error */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
            /** @description service_unavailable */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    /** @description The version of the API that answered. */
                    "API-Version": "2026-04-17";
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description High-level error category
                         * @example invalid_request
                         * @example rate_limit_exceeded
                         * @example processing_error
                         * @example service_unavailable
                         */
                        type: string;
                        /**
                         * @description Specific error code for programmatic handling
                         * @example invalid_card
                         * @example duplicate_request
                         * @example idempotency_conflict
                         * @example too_many_requests
                         * @example idempotency_key_required
                         * @example idempotency_in_flight
                         */
                        code: string;
                        /** @description Human-readable error message */
                        message: string;
                        /** @description RFC 9535 JSONPath of the offending field, e.g. $.payment_method.number */
                        param?: string;
                        /** @description API versions supported by the server, newest first. Only in version-related errors. */
                        supported_versions?: string[];
                    };
                };
            };
        };
    };
    getPaymentReceipt: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The receipt */
            200: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description The signed AP2 PaymentReceipt
                         * @example {
                         *       "payment_id": "pay_01jf3v7k8m2n4p6q8r0s2t4v6w",
                         *       "receipt": "eyJhbGciOiJFUzI1NiIsImtpZCI6Ik56YkxzWGg4dURDY2QtNk1Od1hGNFdfN25vV1hGWkFmSGt4WnNSR0M5WHMiLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiJ1cm46d2lzaHBheTpwc3AifQ.c2lnbmF0dXJl",
                         *       "kid": "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
                         *       "claims": {
                         *         "iss": "urn:wishpay:psp",
                         *         "iat": 1795860000,
                         *         "status": "Success",
                         *         "reference": "n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg",
                         *         "payment_id": "pay_01jf3v7k8m2n4p6q8r0s2t4v6w",
                         *         "psp_confirmation_id": "pay_01jf3v7k8m2n4p6q8r0s2t4v6w",
                         *         "network_confirmation_id": "net_pay_01jf3v7k8m2n4p6q8r0s2t4v6w"
                         *       },
                         *       "created_at": "2026-11-22T10:00:00.000Z"
                         *     }
                         */
                        data: {
                            payment_id: string;
                            /** @description The compact JWS (ES256, header kid and typ JWT): verify it with GET /.well-known/jwks.json */
                            receipt: string;
                            /** @description The signing key */
                            kid: string;
                            claims: {
                                /** @description Wishpay's issuer id: urn:wishpay:psp */
                                iss: string;
                                /** @description When the receipt was signed, in seconds since the epoch */
                                iat: number;
                                /**
                                 * @description Success for a succeeded or refunded payment, Error for a failed one
                                 * @enum {string}
                                 */
                                status: "Success" | "Error";
                                /** @description The base64url SHA-256 of the closed mandate the payment was made with */
                                reference: string;
                                payment_id: string;
                                /** @description Success only: the Wishpay payment id */
                                psp_confirmation_id?: string;
                                /** @description Success only: net_ followed by the Wishpay payment id */
                                network_confirmation_id?: string;
                                /** @description Error only: the payment's failure_code */
                                error?: string;
                                /** @description Error only: the payment's failure_message */
                                error_description?: string;
                            };
                            /**
                             * Format: date-time
                             * @description ISO 8601 UTC timestamp with milliseconds
                             * @example 2026-11-22T10:00:00.000Z
                             */
                            created_at: string;
                        };
                    };
                };
            };
            /** @description Invalid request. Codes: parameter_missing, parameter_invalid, parameter_unknown, invalid_json, idempotency_key_mismatch, resource_limit_exceeded, invalid_url, bad_request, mandate_malformed, resource_missing, sandbox_only. */
            400: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error400"];
                };
            };
            /** @description No API key (authentication_required), or an unknown or revoked one (invalid_api_key); with WWW-Authenticate. Codes: authentication_required, invalid_api_key. */
            401: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error401"];
                };
            };
            /** @description A read-only key (rk_) on a write, or an agent key (ak_) outside what an agent may do. Codes: insufficient_scope. */
            403: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error403"];
                };
            };
            /** @description No such object in your account. Codes: resource_missing. */
            404: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error404"];
                };
            };
            /** @description The request was not received in time (answered on the connection, before any route). Codes: request_timeout. */
            408: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error408"];
                };
            };
            /** @description Conflict: the object is not in a state that allows this, or a request with this idempotency key is still running (retry after Retry-After seconds), or a trusted key's kid is taken (kid_in_use). Codes: invalid_state_transition, idempotency_key_in_use, kid_in_use. */
            409: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description Seconds to wait; sent with `idempotency_key_in_use`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error409"];
                };
            };
            /** @description A path segment is longer than any id. Codes: uri_too_long. */
            414: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error414"];
                };
            };
            /** @description An Expect header other than 100-continue (answered on the connection, before any route). Codes: expectation_failed. */
            417: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error417"];
                };
            };
            /** @description Too many requests with this key; retry after Retry-After seconds. Codes: rate_limited. */
            429: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error429"];
                };
            };
            /** @description Request line and headers too large (answered on the connection, before any route). Codes: request_header_fields_too_large. */
            431: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error431"];
                };
            };
            /** @description Internal error; nothing about it is disclosed. Codes: internal_error. */
            500: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error500"];
                };
            };
            /** @description The database is unreachable or the server is shutting down; retry after Retry-After seconds. Codes: service_unavailable. */
            503: {
                headers: {
                    "Request-Id": components["headers"]["Request-Id"];
                    "API-Version": components["headers"]["API-Version"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error503"];
                };
            };
        };
    };
}
