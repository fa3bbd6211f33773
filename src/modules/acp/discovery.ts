import { Type, type Static } from '@sinclair/typebox'
import { ACP_API_VERSION, SUPPORTED_ACP_VERSIONS } from './schemas.js'

/**
 * The ACP discovery document, `GET /.well-known/acp.json`, per rfcs/rfc.discovery.md (released in
 * ACP 2026-04-17: changelog "Discovery Well-Known Document"; schema `DiscoveryResponse` in
 * spec/2026-04-17/json-schema/schema.agentic_checkout.json, mirrored below).
 *
 * Rules followed (RFC §4 and its §10 conformance checklist):
 * - "MUST include protocol, api_base_url, transports, and capabilities"; `protocol.name` "acp";
 *   `protocol.version` the latest version; `supported_versions` "in chronological order (oldest
 *   first). The last element is always the latest supported version." (the reverse of the Error's
 *   `supported_versions`, which is newest first).
 * - "MUST include at least "rest" in transports"; "MUST include services within capabilities";
 *   Wishpay implements only `delegate_payment` of the services enum.
 * - "MUST NOT require authentication"; "SHOULD include a Cache-Control response header with at
 *   least public, max-age=3600" (ACP_DISCOVERY_CACHE_CONTROL, for the route).
 * - "MUST NOT include merchant identifiers ..., payment handler details ..., keys": nothing here does.
 * `api_base_url` is the base the delegate payment path is appended to: the OpenAPI document's server
 * is the origin and its path `/agentic_commerce/delegate_payment`, so it is Wishpay's public base URL
 * (the RFC's services table writes `POST /delegate_payment`, which no OpenAPI path has).
 */

export const ACP_DISCOVERY_PATH = '/.well-known/acp.json'
export const ACP_DISCOVERY_CACHE_CONTROL = 'public, max-age=3600'

const Version = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' })

export const AcpDiscoveryDocumentSchema = Type.Object({
  protocol: Type.Object({
    name: Type.Literal('acp'),
    version: Version,
    supported_versions: Type.Array(Version, { uniqueItems: true }),
    documentation_url: Type.Optional(Type.String({ format: 'uri' })),
  }, { additionalProperties: false }),
  api_base_url: Type.String({ format: 'uri' }),
  transports: Type.Array(Type.Union([Type.Literal('rest'), Type.Literal('mcp')]), { uniqueItems: true }),
  capabilities: Type.Object({
    services: Type.Array(Type.Union(['checkout', 'orders', 'delegate_payment', 'carts'].map((s) => Type.Literal(s))), { uniqueItems: true }),
    extensions: Type.Optional(Type.Array(Type.Object({
      name: Type.String(),
      spec: Type.Optional(Type.String({ format: 'uri' })),
      schema: Type.Optional(Type.String({ format: 'uri' })),
    }, { additionalProperties: false }))),
    intervention_types: Type.Optional(Type.Array(Type.Union(['3ds', 'biometric', 'address_verification'].map((s) => Type.Literal(s))), { uniqueItems: true })),
    supported_currencies: Type.Optional(Type.Array(Type.String({ pattern: '^[a-z]{3}$' }), { uniqueItems: true })),
    supported_locales: Type.Optional(Type.Array(Type.String(), { uniqueItems: true })),
  }, { additionalProperties: false }),
}, { additionalProperties: false, title: 'AcpDiscoveryDocument', description: 'ACP discovery document (/.well-known/acp.json)' })

export type AcpDiscoveryDocument = Static<typeof AcpDiscoveryDocumentSchema>

export interface AcpDiscoveryOptions {
  documentationUrl?: string
  /** Lowercase ISO 4217 codes, when known ("SHOULD include supported_currencies ... when known"). */
  supportedCurrencies?: readonly string[]
}

/** "https://pay.example.com/" -> "https://pay.example.com"; refuses what is not an absolute http(s) URL without query or fragment. */
function baseUrlOf(raw: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new TypeError(`ACP discovery: base URL is not an absolute URL: ${raw}`)
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError(`ACP discovery: base URL must be http(s): ${raw}`)
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new TypeError(`ACP discovery: base URL must have no query, fragment or credentials: ${raw}`)
  }
  return url.href.replace(/\/+$/, '')
}

/** Oldest first, as the discovery RFC orders them (SUPPORTED_ACP_VERSIONS is newest first). */
const chronological = (versions: readonly string[]) => [...versions].sort()

export function acpDiscoveryDocument(baseUrl: string, options: AcpDiscoveryOptions = {}): AcpDiscoveryDocument {
  const supported = chronological(SUPPORTED_ACP_VERSIONS)
  const doc: AcpDiscoveryDocument = {
    protocol: {
      name: 'acp',
      version: supported[supported.length - 1] ?? ACP_API_VERSION,
      supported_versions: supported,
      ...(options.documentationUrl !== undefined ? { documentation_url: options.documentationUrl } : {}),
    },
    api_base_url: baseUrlOf(baseUrl),
    transports: ['rest'],
    capabilities: {
      services: ['delegate_payment'],
      ...(options.supportedCurrencies !== undefined ? { supported_currencies: [...options.supportedCurrencies] } : {}),
    },
  }
  return doc
}
