/**
 * Names for the addresses of JIT-compiled code, from the perf map node writes with `--perf-basic-prof`
 * (`/tmp/perf-PID.map`: one line a code object, `START SIZE NAME`, in the order they were made).
 *
 * V8 frees code it no longer needs (a function deoptimised, a regular expression or a startup-only
 * module collected) and later puts new code at the same addresses, so one address can lie in several
 * lines' ranges. The map never says when code went away: the line written last is the code there now,
 * and the one a count taken after warm-up most likely ran. Picking any covering line instead named a
 * SQLite payment's 2,400 instructions of our own code `parseSource` of node's CommonJS lexer, which runs
 * only while modules load (thirty-second pass).
 */

interface Entry {
  start: number
  end: number
  /** The line's place in the file: a later line is newer code. */
  order: number
  name: string
}

/** A lookup from an address to the name of the code the map last placed there. */
export function perfMapLookup(text: string): (address: number) => string | undefined {
  const entries: Entry[] = []
  for (const line of text.split('\n')) {
    const [start, size, ...name] = line.split(' ')
    if (!start || !size || name.length === 0) continue
    const from = Number.parseInt(start, 16)
    entries.push({ start: from, end: from + Number.parseInt(size, 16), order: entries.length, name: name.join(' ') })
  }
  entries.sort((a, b) => a.start - b.start)
  const longest = entries.reduce((most, entry) => Math.max(most, entry.end - entry.start), 0)
  return (address) => {
    // The last entry that starts at or before the address; any entry that covers it starts within
    // `longest` before it, so the scan back stops there.
    let low = 0
    let high = entries.length - 1
    while (low <= high) {
      const middle = (low + high) >> 1
      if (entries[middle]!.start <= address) low = middle + 1
      else high = middle - 1
    }
    let newest: Entry | undefined
    for (let i = high; i >= 0 && entries[i]!.start > address - longest - 1; i--) {
      const entry = entries[i]!
      if (address < entry.end && (newest === undefined || entry.order > newest.order)) newest = entry
    }
    return newest?.name
  }
}
