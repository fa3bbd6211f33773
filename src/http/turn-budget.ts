import type { FastifyInstance, onRequestHookHandler } from 'fastify'

/**
 * What a turn of the event loop may start; the rest waits, in order, for the next turns. libuv accepts
 * one connection a turn (libuv#3696), and a turn that starts every request its sockets delivered lasts
 * as long as all of them: with 64 connections busy, 64 new ones took a third of a second to a second to
 * be accepted, which was the tail a load generator opening its connections measured
 * (docs/performance.md, issue 17). Small turns keep accepting; a turn costs one poll and its per-turn
 * work (the read snapshot, the log write), spread over the requests it starts.
 *
 * A read costs one unit and any other request two, so a turn starts 16 reads or 8 writes: a write costs
 * several reads' CPU and joins a durable batch, and 16 writes a turn left the tail (third pass), while 16
 * reads a turn cost 8-12 % less CPU a GET than 8 on both stores (twenty-first pass).
 */
export const TURN_BUDGET = 16
export const WRITE_COST = 2
/** Taken entries a queue that never drains keeps before it drops them (exported for its test). */
export const COMPACT_AFTER = 1024

/** What a request costs of a turn's budget: reads (GET, HEAD) one unit, anything else WRITE_COST. */
export function requestCost(method: string): number {
  return method === 'GET' || method === 'HEAD' ? 1 : WRITE_COST
}

/**
 * Admits requests in arrival order while the turn's budget lasts; a request is started if anything is
 * left of it, so the last one of a turn may overdraw it by a unit.
 */
export function turnBudget(budget = TURN_BUDGET): (admit: () => void, cost?: number) => void {
  let spent = 0
  let turnScheduled = false
  // A first-in-first-out queue read from `head`: shift() moved every waiting entry (two write barriers
  // each) for each request started, about 2 % of a GET's instructions at 64 connections
  // (docs/performance.md, twenty-eighth pass). Taken entries are cleared; the arrays start over when
  // they are drained, and drop what was taken once that is most of them.
  const waiting: Array<(() => void) | undefined> = []
  const waitingCosts: number[] = []
  let head = 0

  const take = (): (() => void) => {
    const admit = waiting[head]!
    spent += waitingCosts[head]!
    waiting[head] = undefined
    head++
    if (head === waiting.length) {
      waiting.length = 0
      waitingCosts.length = 0
      head = 0
    } else if (head >= COMPACT_AFTER && head * 2 >= waiting.length) {
      waiting.splice(0, head)
      waitingCosts.splice(0, head)
      head = 0
    }
    return admit
  }

  // Runs in the check phase, after the poll phase that read the sockets: a new budget, spent first on
  // the requests that waited.
  const nextTurn = (): void => {
    turnScheduled = false
    spent = 0
    while (spent < budget && head < waiting.length) take()()
    if (spent > 0) scheduleTurn()
  }
  const scheduleTurn = (): void => {
    if (turnScheduled) return
    turnScheduled = true
    setImmediate(nextTurn)
  }

  return (admit, cost = 1) => {
    scheduleTurn()
    if (spent < budget && head === waiting.length) {
      spent += cost
      admit()
    } else {
      waiting.push(admit)
      waitingCosts.push(cost)
    }
  }
}

/** The budget as an onRequest hook: app.ts adds it before authentication, validation and the route's work. */
export function registerTurnBudget(app: FastifyInstance, budget = TURN_BUDGET): void {
  const admit = turnBudget(budget)
  const hook: onRequestHookHandler = (request, _reply, done) => { admit(done, requestCost(request.method)) }
  app.addHook('onRequest', hook)
}
