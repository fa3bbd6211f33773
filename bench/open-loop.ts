/**
 * A load that does not wait for answers: requests are sent on a schedule, `rate` a second spread
 * evenly, over at most `connections` keep-alive connections. autocannon and wrk are closed loops: each
 * of 64 connections sends its next request when the last is answered, so they measure latency at
 * saturation, where a request waits on average 64 / throughput whatever the server does with it.
 * This shows the latency at a load the server carries. A request due while every connection is busy
 * waits in the agent's queue, and its latency counts from when it was due, so a stall is not hidden
 * by the requests it kept from being sent (coordinated omission). autocannon's own rate option sends
 * each second's budget at full speed and then pauses, which measures bursts instead.
 */
import http from 'node:http'
import * as hdr from 'hdr-histogram-js'
import { bodyMaker, type LoadOptions } from './scenarios.js'

export interface OpenLoopResult {
  /** The rate asked for. */
  offeredPerSecond: number
  /** Answers over the measured seconds. */
  requestsPerSecond: number
  /** Milliseconds from when a request was due to the end of its answer. */
  p50: number
  p99: number
  /** Non-2xx answers, socket errors, and requests still unanswered 10 s after the run. */
  errors: number
  requests: number
}

const DRAIN_MS = 10_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** LoadOptions' request at `rate` a second; a warm-up first at the same rate, not measured. */
export async function openLoop(options: LoadOptions & { rate: number }): Promise<OpenLoopResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections })
  try {
    if (options.warmupSeconds) await measure(options, agent, options.warmupSeconds)
    return await measure(options, agent, options.durationSeconds)
  } finally {
    agent.destroy()
  }
}

async function measure(options: LoadOptions & { rate: number }, agent: http.Agent, seconds: number): Promise<OpenLoopResult> {
  const url = new URL(options.path, options.url)
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (options.key) headers.authorization = `Bearer ${options.key}`
  const makeBody = options.body === undefined ? null : bodyMaker(options.body, options.mandates ?? [])
  // Microseconds, up to a minute, three significant digits.
  const latency = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 })
  let answered = 0
  let errors = 0
  const pending = new Set<Promise<void>>()

  const send = (dueNs: bigint): Promise<void> => new Promise((resolve) => {
    const request = http.request(url, { method: options.method ?? 'GET', agent, headers }, (response) => {
      response.resume()
      response.on('end', () => {
        latency.recordValue(Number((process.hrtime.bigint() - dueNs) / 1000n))
        answered++
        if (response.statusCode === undefined || response.statusCode >= 300) errors++
        resolve()
      })
    })
    request.on('error', () => {
      errors++
      resolve()
    })
    request.end(makeBody ? makeBody() : options.body)
  })

  const intervalNs = 1e9 / options.rate
  const start = process.hrtime.bigint()
  const endNs = BigInt(seconds * 1e9)
  let sent = 0
  for (;;) {
    const elapsed = process.hrtime.bigint() - start
    if (elapsed >= endNs) break
    // Every request due by now, each stamped with the time it was due (a late timer delays none of them).
    const due = Math.floor(Number(elapsed) / intervalNs) + 1
    for (; sent < due; sent++) {
      const sending = send(start + BigInt(Math.round(sent * intervalNs)))
      pending.add(sending)
      void sending.then(() => pending.delete(sending))
    }
    await sleep(1)
  }
  const drained = await Promise.race([Promise.all(pending).then(() => true), sleep(DRAIN_MS).then(() => false)])
  const unanswered = drained ? 0 : pending.size
  return {
    offeredPerSecond: options.rate,
    requestsPerSecond: Math.round(answered / seconds),
    // Milliseconds to a tenth, as wrk prints them.
    p50: Math.round(latency.getValueAtPercentile(50) / 100) / 10,
    p99: Math.round(latency.getValueAtPercentile(99) / 100) / 10,
    errors: errors + unanswered,
    requests: answered,
  }
}
