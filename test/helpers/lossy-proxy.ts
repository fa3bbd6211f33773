import net from 'node:net'

/** PostgreSQL's ReadyForQuery, idle: the last message of a simple query's answer, after its commit. */
const READY_IDLE = Buffer.from([0x5a, 0, 0, 0, 5, 0x49])

export interface LossyProxy {
  /** postgres:// URL of `target` with the proxy's host and port in its place. */
  url: string
  /**
   * Once: the next message from a client that `matches` goes through to PostgreSQL, which answers it in
   * full (a simple query's answer ends after its commit), and then the answer is not passed on: the
   * connection is dropped (`drop`, the default), or stays open and silent (`silence`, a server that
   * stopped answering). A COMMIT whose acknowledgement is lost.
   */
  loseNextAnswer(matches: (message: string) => boolean, how?: 'drop' | 'silence'): void
  /** How many messages that matched the last loseNextAnswer reached PostgreSQL, the lost one included. */
  matched(): number
  close(): Promise<void>
}

/** A loopback TCP proxy to the PostgreSQL of `targetUrl`, for tests of what a lost answer does. */
export async function startLossyProxy(targetUrl: string): Promise<LossyProxy> {
  const target = new URL(targetUrl)
  let matches: ((message: string) => boolean) | undefined
  let armed = false
  let silence = false
  let matched = 0
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    sockets.add(client).add(upstream)
    let cutting = false
    let silent = false
    let answer = Buffer.alloc(0)
    client.on('data', (chunk) => {
      if (matches?.(chunk.toString('latin1'))) {
        matched++
        if (armed) {
          armed = false
          if (silence) silent = true
          else cutting = true
        }
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (silent) return
      if (!cutting) return void client.write(chunk)
      answer = Buffer.concat([answer, chunk])
      if (answer.subarray(-READY_IDLE.length).equals(READY_IDLE)) {
        client.destroy()
        upstream.destroy()
      }
    })
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.on('error', () => b.destroy())
      a.on('close', () => b.destroy())
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(targetUrl)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as net.AddressInfo).port)
  return {
    url: url.toString(),
    loseNextAnswer(predicate, how = 'drop') {
      matches = predicate
      silence = how === 'silence'
      matched = 0
      armed = true
    },
    matched: () => matched,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
