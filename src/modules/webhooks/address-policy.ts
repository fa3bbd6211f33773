import dns from 'node:dns'
import type { LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Where webhooks may go. Only public unicast addresses: private, loopback, link-local, multicast,
 * carrier-grade NAT, reserved and unspecified ranges are refused (server-side request forgery),
 * unless WEBHOOK_ALLOW_PRIVATE is set for local development and tests.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  // ::ffff:10.0.0.1 is 10.0.0.1.
  return ipaddr.process(address).range() === 'unicast'
}

const REFUSED = 'url must not point to a private, loopback, link-local or multicast address'

/** Why a webhook URL is not acceptable, or undefined when it is. Resolves the host name. */
export async function urlProblem(raw: string, allowPrivate: boolean): Promise<string | undefined> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'url must be an absolute http or https URL'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'url must use http or https'
  if (url.username || url.password) return 'url must not contain credentials'
  if (allowPrivate) return undefined
  const host = url.hostname.replace(/^\[|\]$/g, '')
  let addresses: string[]
  if (ipaddr.isValid(host)) {
    addresses = [host]
  } else {
    try {
      addresses = (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address)
    } catch {
      return `url host ${host} could not be resolved`
    }
  }
  return addresses.every(isPublicAddress) ? undefined : REFUSED
}

/**
 * A DNS lookup for outgoing webhook connections that refuses non-public answers. The check runs on
 * the very addresses the socket connects to, so a name that re-points after it was saved (DNS
 * rebinding) is still refused.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 4)
      const list = addresses as dns.LookupAddress[]
      if (!allowPrivate && !list.every((a) => isPublicAddress(a.address))) {
        return callback(Object.assign(new Error(`${hostname}: ${REFUSED}`), { code: 'EADDRNOTALLOWED' }), '', 4)
      }
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list)
      return callback(null, list[0]!.address, list[0]!.family)
    })
  }
}

/** An IP literal in a URL never goes through lookup, so it is checked on its own. */
export function literalHostRefused(raw: string, allowPrivate: boolean): boolean {
  if (allowPrivate) return false
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, '')
  return ipaddr.isValid(host) && !isPublicAddress(host)
}
