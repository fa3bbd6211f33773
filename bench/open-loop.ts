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
import { setTimeout as sleep } from 'node:timers/promises'
import * as hdr from 'hdr-histogram-js'
import { bodyMaker, type LoadOptions, requestHeaders } from './scenarios.js'

export interface OpenLoopResult {
  /** The rate asked for. */
  offeredPerSecond: number
  /** Answers that came within the measured seconds, a second. */
  requestsPerSecond: number
  /** Milliseconds from when a request was due to the end of its answer. */
  p50: number
  p99: number
  /** Non-2xx answers, socket errors, and requests still unanswered 10 s after the run (then cancelled). */
  errors: number
  requests: number
}

const DRAIN_MS = 10_000

/** LoadOptions' request at `rate` a second; a warm-up first at the same rate, not measured. */
export async function openLoop(options: LoadOptions & { rate: number }): Promise<OpenLoopResult> {
  if (options.warmupSeconds) await measure(options, options.warmupSeconds)
  return measure(options, options.durationSeconds)
}

/** One run on its own agent, so that nothing of a warm-up is measured; returns once none of its requests is left. */
async function measure(options: LoadOptions & { rate: number }, seconds: number): Promise<OpenLoopResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections })
  const url = new URL(options.path, options.url)
  const headers = requestHeaders(options)
  const makeBody = options.body === undefined ? null : bodyMaker(options.body, options.mandates ?? [])
  // Microseconds, three significant digits (the histogram grows past a minute if it must).
  const latency = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 })
  let answeredInTime = 0
  let answered = 0
  let errors = 0
  const pending = new Set<http.ClientRequest>()
  /** Set once the last request is sent: from then on the last to finish ends the drain. */
  let sendingOver = false
  let settleAll: () => void = () => {}
  const allSettled = new Promise<void>((resolve) => { settleAll = resolve })

  const start = process.hrtime.bigint()
  const endNs = start + BigInt(seconds * 1e9)
  const send = (dueNs: bigint): void => {
    let done = false
    // Exactly once a request, whatever node reports of it (an answer, an error, a close mid-body).
    const finish = (ok: boolean): void => {
      if (done) return
      done = true
      const now = process.hrtime.bigint()
      if (ok) {
        latency.recordValue(Number((now - dueNs) / 1000n))
        answered++
        if (now <= endNs) answeredInTime++
      } else {
        errors++
      }
      pending.delete(request)
      if (sendingOver && pending.size === 0) settleAll()
    }
    const request = http.request(url, { method: options.method ?? 'GET', agent, headers }, (response) => {
      response.resume()
      response.on('end', () => finish(response.statusCode !== undefined && response.statusCode < 300))
    })
    request.on('error', () => finish(false))
    request.on('close', () => finish(false))
    pending.add(request)
    request.end(makeBody ? makeBody() : options.body)
  }

  const intervalNs = 1e9 / options.rate
  let sent = 0
  for (;;) {
    const now = process.hrtime.bigint()
    if (now >= endNs) break
    // Every request due by now, each stamped with the time it was due (a late timer delays none of them).
    const due = Math.floor(Number(now - start) / intervalNs) + 1
    for (; sent < due; sent++) send(start + BigInt(Math.round(sent * intervalNs)))
    await sleep(1)
  }
  sendingOver = true
  if (pending.size === 0) settleAll()
  let drainTimer: NodeJS.Timeout | undefined
  await Promise.race([allSettled, new Promise((resolve) => { drainTimer = setTimeout(resolve, DRAIN_MS) })])
  clearTimeout(drainTimer)
  // Still unanswered: counted as errors and cancelled, so that none reaches the server during the next run.
  for (const request of [...pending]) request.destroy()
  agent.destroy()
  return {
    offeredPerSecond: options.rate,
    requestsPerSecond: Math.round(answeredInTime / seconds),
    // Milliseconds to a tenth, as wrk prints them; answers after the run's end included.
    p50: Math.round(latency.getValueAtPercentile(50) / 100) / 10,
    p99: Math.round(latency.getValueAtPercentile(99) / 100) / 10,
    errors,
    requests: answered,
  }
}
