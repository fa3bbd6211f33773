import dns from 'node:dns'
import type { LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'

/** IANA's global unicast space: every public IPv6 address in use lies in it. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3')
/** NAT64's well-known prefix (RFC 6052): the last 32 bits are an IPv4 address. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96')

function isPublicV4(address: ipaddr.IPv4): boolean {
  return address.range() === 'unicast'
}

/**
 * Where webhooks may go. Only public unicast addresses: private, loopback, link-local, multicast,
 * carrier-grade NAT, reserved and unspecified ranges are refused (server-side request forgery),
 * unless WEBHOOK_ALLOW_PRIVATE is set for local development and tests.
 *
 * IPv6 is allowed only inside the global unicast space 2000::/3 and outside ipaddr.js's special ranges,
 * which refuses every form that can carry an IPv4 address to a stack that would route it as IPv4:
 * IPv4-compatible (::a.b.c.d, deprecated by RFC 4291), 6to4 (2002::/16), Teredo (2001::/32) and
 * NAT64's local-use prefix (64:ff9b:1::/48). Two embedding forms are judged by the IPv4 address they
 * carry: IPv4-mapped (::ffff:a.b.c.d) and NAT64's well-known prefix (64:ff9b::a.b.c.d), which is what a
 * DNS64 resolver answers for every IPv4-only receiver on an IPv6-only host.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv4') return isPublicV4(parsed as ipaddr.IPv4)
  const v6 = parsed as ipaddr.IPv6
  if (v6.isIPv4MappedAddress()) return isPublicV4(v6.toIPv4Address())
  if (v6.match(NAT64_WELL_KNOWN)) return isPublicV4(ipaddr.fromByteArray(v6.toByteArray().slice(12)) as ipaddr.IPv4)
  return v6.match(GLOBAL_UNICAST_V6) && v6.range() === 'unicast'
}

/**
 * One answer for a host that is not public and for one that does not resolve, so that nobody can learn
 * through this API which internal names exist.
 */
const NOT_PUBLIC = 'url host must be a public address, or a name that resolves to public addresses only (private, loopback, link-local, multicast and reserved addresses are refused)'

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
      return NOT_PUBLIC
    }
  }
  return addresses.length > 0 && addresses.every(isPublicAddress) ? undefined : NOT_PUBLIC
}

/**
 * A DNS lookup for outgoing webhook connections that refuses non-public answers. The check runs on
 * the very addresses the socket connects to, so a name that re-points after it was saved (DNS
 * rebinding) is still refused. A failed lookup is reported in the same words as a refused one (the
 * attempt's error is shown by the deliveries API), so that re-pointing a saved name at internal names
 * cannot tell which of them exist.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  const refused = (hostname: string) => Object.assign(new Error(`${hostname}: ${NOT_PUBLIC}`), { code: 'EADDRNOTALLOWED' })
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(allowPrivate ? error : refused(hostname), '', 4)
      const list = addresses as dns.LookupAddress[]
      if (!allowPrivate && (list.length === 0 || !list.every((a) => isPublicAddress(a.address)))) {
        return callback(refused(hostname), '', 4)
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
