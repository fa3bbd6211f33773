/** Characters a JSON string holds as they are: what our ids, methods, route patterns and member names are made of. */
const PLAIN = /^[\w:/.-]*$/

/**
 * A string as JSON writes it. JSON.stringify of a short string cost about 1,250 instructions (callgrind,
 * docs/performance.md, twenty-fifth pass); a string of plain characters needs only its quotes, and any
 * other goes through JSON.stringify.
 */
export function jsonQuoted(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text)
}

/**
 * jsonQuoted for texts that repeat (route patterns, a body's member names), remembered in a Map of at most
 * `max`: a lookup of the same string is a fraction of the regular expression's test (about 500
 * instructions a call, docs/performance.md, twenty-eighth pass). Past `max` texts, the rest are quoted
 * each time.
 */
export function rememberedQuotes(max = 256): (text: string) => string {
  const quotes = new Map<string, string>()
  return (text) => {
    let quoted = quotes.get(text)
    if (quoted === undefined) {
      quoted = jsonQuoted(text)
      if (quotes.size < max) quotes.set(text, quoted)
    }
    return quoted
  }
}
