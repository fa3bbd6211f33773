import net from 'node:net'

/** How a lost answer is lost: the connection dropped, left open and silent, or answered with garbage. */
export type Loss = 'drop' | 'silence' | 'garble'

export interface LoseAnswer {
  /** The client message (its text, latin1) that picks the connection. */
  when(message: string): boolean
  /** The message on that connection, from that one on, whose answer is lost; default the same one. */
  cutAt?(message: string): boolean
  how?: Loss
}

export interface LossyProxy {
  /** postgres:// URL of the target with the proxy's host and port in its place. */
  url: string
  /**
   * Once: the first connection that sends a message matching `when` has the answer to its `cutAt`
   * message lost. PostgreSQL answers it in full (a simple query's answer ends, with ReadyForQuery, after
   * its commit), and the answer is not passed on.
   */
  loseAnswer(options: LoseAnswer): void
  /** Client messages matching the last loseAnswer's `when` that reached PostgreSQL. */
  matched(): number
  /** Answers lost since the last loseAnswer: 1 once it has been, else 0. */
  lost(): number
  /** Resolves once PostgreSQL has answered the lost message in full (it committed, or not, by then). */
  answered(): Promise<void>
  close(): Promise<void>
}

/** A PostgreSQL message that ends a query's answer: ReadyForQuery. */
const READY_FOR_QUERY = 0x5a
/** A message type no PostgreSQL server sends. */
const GARBAGE = Buffer.from([0x01, 0, 0, 0, 4])

/**
 * Splits a byte stream of PostgreSQL's protocol into whole messages: a type byte and an int32 length
 * that counts itself. A client's first message (startup) has no type byte. Plain connections only: an
 * SSLRequest would be a second untyped message, and what follows it is TLS.
 */
function messageFramer(untypedFirst: boolean) {
  let pending: Buffer = Buffer.alloc(0)
  let typed = !untypedFirst
  return (chunk: Buffer): Buffer[] => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    const messages: Buffer[] = []
    for (;;) {
      const head = typed ? 1 : 0
      if (pending.length < head + 4) break
      const size = head + pending.readInt32BE(head)
      if (pending.length < size) break
      messages.push(pending.subarray(0, size))
      pending = pending.subarray(size)
      typed = true
    }
    return messages
  }
}

/** A loopback TCP proxy to the PostgreSQL of `targetUrl`, for tests of what a lost answer does. */
export async function startLossyProxy(targetUrl: string): Promise<LossyProxy> {
  const target = new URL(targetUrl)
  let loss: (LoseAnswer & { how: Loss }) | undefined
  let armed = false
  let matched = 0
  let lost = 0
  let markAnswered!: () => void
  let answered = Promise.resolve()
  const sockets = new Set<net.Socket>()
  const track = (socket: net.Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    return socket
  }

  const server = net.createServer((client) => {
    track(client)
    const upstream = track(net.connect(Number(target.port || 5432), target.hostname))
    const fromClient = messageFramer(true)
    const fromServer = messageFramer(false)
    // This connection's part: picked (waiting for `cutAt`), then cutting (the answer is being lost).
    let picked: LoseAnswer | undefined
    let cutting: Loss | undefined
    let answeredHere = false

    client.on('data', (chunk) => {
      for (const message of fromClient(chunk)) {
        const text = message.toString('latin1')
        if (loss?.when(text)) {
          matched++
          if (armed) {
            armed = false
            picked = loss
          }
        }
        if (picked && (picked.cutAt ?? picked.when)(text)) {
          cutting = picked.how ?? 'drop'
          picked = undefined
        }
        upstream.write(message)
      }
    })
    upstream.on('data', (chunk) => {
      for (const message of fromServer(chunk)) {
        if (cutting === undefined) {
          client.write(message)
          continue
        }
        // What follows the lost answer on this connection is lost with it.
        if (message[0] !== READY_FOR_QUERY || answeredHere) continue
        answeredHere = true
        lost++
        markAnswered()
        if (cutting === 'garble') client.write(GARBAGE)
        // Silent: the connection stays open until the client gives up on it.
        if (cutting === 'drop') client.destroy()
      }
    })
    // A client that gave up on a silent answer leaves PostgreSQL to finish it first.
    const endUpstream = () => (cutting === 'silence' ? void answered.then(() => upstream.destroy()) : upstream.destroy())
    client.on('error', endUpstream).on('close', endUpstream)
    upstream.on('error', () => client.destroy()).on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(targetUrl)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as net.AddressInfo).port)
  return {
    url: url.toString(),
    loseAnswer(options) {
      loss = { ...options, how: options.how ?? 'drop' }
      matched = 0
      lost = 0
      armed = true
      answered = new Promise<void>((resolve) => { markAnswered = resolve })
    },
    matched: () => matched,
    lost: () => lost,
    answered: () => answered,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
