/**
 * Progress of a long bench step, on stderr (stdout carries the results):
 * `[postgres] seeding wishes: 400,000/1,000,000 (40%)`. At most once per `everyMs`, and always at the
 * end; on a terminal one line rewritten in place (\r), otherwise one plain line each, for logs.
 */
export interface Progress {
  /** `done` of the total are finished. */
  update(done: number): void
}

export interface ProgressOptions {
  stream?: Pick<NodeJS.WriteStream, 'write' | 'isTTY'>
  everyMs?: number
  now?: () => number
}

const count = (n: number) => n.toLocaleString('en-US')

export function progress(label: string, total: number, options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr
  const everyMs = options.everyMs ?? 1000
  const now = options.now ?? Date.now
  let last = -Infinity
  return {
    update(done) {
      const finished = done >= total
      if (!finished && now() - last < everyMs) return
      last = now()
      const line = `${label}: ${count(done)}/${count(total)} (${total > 0 ? Math.floor((done / total) * 100) : 100}%)`
      // \x1b[K clears what a longer earlier line left to the right.
      stream.write(stream.isTTY ? `\r${line}\x1b[K${finished ? '\n' : ''}` : `${line}\n`)
    },
  }
}
