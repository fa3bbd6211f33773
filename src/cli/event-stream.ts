import { setTimeout as sleep } from 'node:timers/promises'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { ApiError, apiErrorOf, type ApiTarget } from './api.js'

/** One event off GET /events/stream: `body` is the event's JSON exactly as sent, the webhook body. */
export interface StreamedEvent {
  id: string
  type: string
  body: string
}

export interface FollowOptions {
  /** Comma-separated event types; all when absent. */
  types?: string | undefined
  /** Ends the stream; followEvents then resolves. */
  signal: AbortSignal
  /** The stream is open (again, after a reconnection, when `reconnected`). */
  onOpen(reconnected: boolean): void
  /** Each event, in order; the next is read once this resolves. */
  onEvent(event: StreamedEvent): Promise<void>
  /** The stream dropped and is opened again after `delayMs`, from the last event received. */
  onDrop(reason: string, delayMs: number): void
}

/** The server's `retry:` until it says otherwise; the wait grows to this bound while it cannot be reached. */
const FIRST_RETRY_MS = 1000
const MAX_RETRY_MS = 30_000

type Item = { id: string, event?: StreamedEvent }

/**
 * Follows the account's events: reads the stream, and when it drops, opens it again with Last-Event-ID
 * (the last event received, or the position the stream started at), so nothing is missed or repeated.
 * An answer the server will give again (401, 400, 403) ends it with ApiError, and so does a server that
 * cannot be reached at first; 429 and 5xx, and a stream that drops once open, are retried.
 */
export async function followEvents(target: ApiTarget, options: FollowOptions): Promise<void> {
  let lastId: string | undefined
  let retryMs = FIRST_RETRY_MS
  let failures = 0
  let opened = false
  const query = options.types ? `?types=${encodeURIComponent(options.types)}` : ''

  while (!options.signal.aborted) {
    let reason: string
    let delayMs: number | undefined
    try {
      const res = await fetch(`${target.baseUrl}/events/stream${query}`, {
        headers: { authorization: `Bearer ${target.apiKey}`, accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
        signal: options.signal,
      })
      if (!res.ok) {
        const error = await apiErrorOf(res)
        if (res.status !== 429 && res.status < 500) throw error
        reason = `${error.message} (${error.code})`
        if (error.retryAfterSeconds !== undefined) delayMs = error.retryAfterSeconds * 1000
      } else {
        options.onOpen(opened)
        opened = true
        failures = 0
        const items: Item[] = []
        const parser = createParser({
          onRetry: (ms) => { retryMs = ms },
          onId: (id) => { items.push({ id }) },
          onEvent: (message: EventSourceMessage) => {
            const item = items.at(-1)
            if (item && message.id === item.id) item.event = { id: message.id, type: message.event ?? 'message', body: message.data }
          },
        })
        for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
          parser.feed(chunk)
          for (const item of items.splice(0)) {
            if (item.event) await options.onEvent(item.event)
            lastId = item.id
          }
        }
        reason = 'the server closed the stream'
      }
    } catch (error) {
      if (options.signal.aborted) return
      // A refusal, or a server never reached (a wrong --base-url): waiting would not help.
      if (error instanceof ApiError || !opened) throw error
      reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)
    }
    if (options.signal.aborted) return
    failures += 1
    const wait = delayMs ?? Math.min(retryMs * 2 ** Math.max(0, failures - 1), MAX_RETRY_MS)
    options.onDrop(reason, wait)
    try {
      await sleep(wait, undefined, { signal: options.signal })
    } catch {
      return
    }
  }
}
