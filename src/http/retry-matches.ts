import { LRUCache } from 'lru-cache'
import { fingerprintOf, type FingerprintedRequest, requestTextOf } from './fingerprint.js'

/** Bounds the memory of the memo: what its entries hold on the heap, at most. */
const MAX_BYTES = 1_000_000
/** A request text longer than this is checked in full each time: retries of such bodies are rare. */
const MAX_TEXT_LENGTH = 8_192
/** What an entry holds besides its texts: the entry object, the fingerprint's 64 characters, the cache's bookkeeping. */
const ENTRY_OVERHEAD_BYTES = 512

interface Match {
  text: string
  fingerprint: string
}

// lru-cache's get() allocates an options object when none is passed; this one is reused.
const GET_OPTIONS = {}

/**
 * Whether a request asks what the record under its key answered, as http/idempotency.ts decides before a
 * replay: the request's fingerprint equals the record's. A retry sends the same bytes again, so each key
 * remembers the text (fingerprint.ts, requestTextOf) of the last request whose fingerprint matched its
 * record, with that fingerprint: a request with the same text has the same fingerprint, and is answered
 * without the canonical JSON and the SHA-256 (about 14,000 of a SQLite replay's 213,000 instructions,
 * callgrind, docs/performance.md, thirty-second pass). Any other text is checked in full. The memo is
 * bound to the record's fingerprint, so a key's next record (after the first expired) is checked in full
 * too. Per process, bounded in bytes; an entry keeps its own copies of its strings (ownCopy below) and
 * counts them at two bytes a character.
 */
export function createRetryMatches(maxBytes = MAX_BYTES): (request: FingerprintedRequest, slot: string, fingerprint: string) => boolean {
  const matched = new LRUCache<string, Match>({
    maxSize: maxBytes,
    maxEntrySize: ENTRY_OVERHEAD_BYTES + 2 * (MAX_TEXT_LENGTH + 1_024),
    sizeCalculation: (match, slot) => ENTRY_OVERHEAD_BYTES + 2 * (match.text.length + slot.length),
  })
  return (request, slot, fingerprint) => {
    const text = requestTextOf(request)
    const known = matched.get(slot, GET_OPTIONS)
    if (known !== undefined && known.fingerprint === fingerprint && known.text === text) return true
    if (fingerprintOf(request) !== fingerprint) return false
    if (text.length <= MAX_TEXT_LENGTH) matched.set(ownCopy(slot), { text: ownCopy(text), fingerprint })
    return true
  }
}

/**
 * A copy of a string that shares nothing with it, at most two bytes a character: what the memo's bound
 * counts. V8 may hold a string as a slice of a longer one, which keeps the whole of it alive (the path
 * of a URL with a long query string, sliced off it in fingerprint.ts), or as a tree of the pieces it was
 * joined from, at tens of bytes a piece; either would let an entry hold many times what it is counted
 * for. UTF-16 both ways keeps every code unit, lone surrogates included, so the copy is equal to the text.
 */
function ownCopy(text: string): string {
  return Buffer.from(text, 'utf16le').toString('utf16le')
}
