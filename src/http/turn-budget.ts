import type { FastifyInstance, onRequestHookHandler } from 'fastify'

/**
 * Requests started per turn of the event loop; the rest wait, in order, for the next turns. libuv
 * accepts one connection a turn (libuv#3696), and a turn that starts every request its sockets
 * delivered lasts as long as all of them: with 64 connections busy, 64 new ones took a third of a second
 * to a second to be accepted, which was the tail a load generator opening its connections measured
 * (docs/performance.md, issue 17). Small turns keep accepting; a turn costs one poll, about a
 * microsecond a request at this size.
 */
export const REQUESTS_PER_TURN = 8

/** Admits requests in arrival order, at most `perTurn` a turn of the event loop. */
export function turnBudget(perTurn = REQUESTS_PER_TURN): (admit: () => void) => void {
  let started = 0
  let turnScheduled = false
  const waiting: Array<() => void> = []

  // Runs in the check phase, after the poll phase that read the sockets: a new budget, spent first on
  // the requests that waited.
  const nextTurn = (): void => {
    turnScheduled = false
    started = 0
    while (started < perTurn && waiting.length > 0) {
      started++
      waiting.shift()!()
    }
    if (started > 0) scheduleTurn()
  }
  const scheduleTurn = (): void => {
    if (turnScheduled) return
    turnScheduled = true
    setImmediate(nextTurn)
  }

  return (admit) => {
    scheduleTurn()
    if (started < perTurn && waiting.length === 0) {
      started++
      admit()
    } else {
      waiting.push(admit)
    }
  }
}

/** The budget as an onRequest hook: app.ts adds it before authentication, validation and the route's work. */
export function registerTurnBudget(app: FastifyInstance, perTurn = REQUESTS_PER_TURN): void {
  const admit = turnBudget(perTurn)
  const hook: onRequestHookHandler = (_request, _reply, done) => { admit(done) }
  app.addHook('onRequest', hook)
}
