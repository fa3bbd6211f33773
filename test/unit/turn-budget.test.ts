import assert from 'node:assert/strict'
import net from 'node:net'
import { describe, test } from 'node:test'
import Fastify from 'fastify'
import { COMPACT_AFTER, registerTurnBudget, requestCost, turnBudget, WRITE_COST } from '../../src/http/turn-budget.js'

const nextTurn = () => new Promise<void>((resolve) => { setImmediate(resolve) })

/** Requests started per turn of the event loop (src/http/turn-budget.ts). */
describe('turn budget', () => {
  test('starts at most its budget a turn, the rest in arrival order in the turns after', async () => {
    const admit = turnBudget(3)
    const started: number[][] = [[]]
    for (let i = 0; i < 8; i++) admit(() => started.at(-1)!.push(i))
    for (let turn = 0; turn < 3; turn++) {
      started.push([])
      await nextTurn()
    }
    assert.deepEqual(started.filter((turn) => turn.length > 0), [[0, 1, 2], [3, 4, 5], [6, 7]])
  })

  test('a request that comes while others wait queues behind them', async () => {
    const admit = turnBudget(2)
    const order: string[] = []
    for (const id of ['a', 'b', 'c']) admit(() => order.push(id))
    admit(() => order.push('d'))
    await nextTurn()
    admit(() => order.push('e'))
    await nextTurn()
    await nextTurn()
    assert.deepEqual(order, ['a', 'b', 'c', 'd', 'e'])
  })

  test('a queue that is never drained for thousands of requests starts each once, in arrival order, within budget', async () => {
    // Requests of uneven costs arrive every turn for 40 turns, so the queue only drains at the end: it is
    // read past COMPACT_AFTER taken entries and drops what it took while others still wait (a cost read
    // from the wrong entry after that shows as a turn that spent too little or too much).
    const budget = 100
    const admit = turnBudget(budget)
    const costOf = (id: number) => 1 + (Math.imul(id, 2654435761) >>> 29)
    const started: number[][] = [[]]
    let arrived = 0
    const arrive = (count: number) => {
      for (let i = 0; i < count; i++) {
        const id = arrived++
        admit(() => started.at(-1)!.push(id), costOf(id))
      }
    }
    arrive(COMPACT_AFTER * 2)
    let turns = 0
    while (started.flat().length < arrived && turns < 1000) {
      started.push([])
      if (turns++ < 40) arrive(budget / 4)
      await nextTurn()
    }
    assert.ok(arrived > COMPACT_AFTER * 3 / 2 + budget, `${arrived} arrived`)
    assert.deepEqual(started.flat(), Array.from({ length: arrived }, (_, i) => i))
    // Each turn started requests while its budget lasted: all but its last fit within the budget, and
    // every turn but the last spent it all.
    const turnsStarted = started.filter((turn) => turn.length > 0)
    for (const [i, turn] of turnsStarted.entries()) {
      const sum = turn.reduce((total, id) => total + costOf(id), 0)
      assert.ok(sum - costOf(turn.at(-1)!) < budget && (i === turnsStarted.length - 1 || sum >= budget), `turn ${i} spent ${sum}`)
    }
    // Drained, it starts the next request at once.
    let startedNow = false
    await nextTurn()
    admit(() => { startedNow = true })
    assert.ok(startedNow)
  })

  test('a write costs two units of the budget, a read one; the turn that overdraws is the last to start', async () => {
    const admit = turnBudget(4)
    const started: string[][] = [[]]
    for (const [id, cost] of [['r1', 1], ['w1', 2], ['w2', 2], ['r2', 1], ['w3', 2], ['w4', 2], ['w5', 2]] as const) {
      admit(() => started.at(-1)!.push(id), cost)
    }
    for (let turn = 0; turn < 4; turn++) {
      started.push([])
      await nextTurn()
    }
    assert.deepEqual(started.filter((turn) => turn.length > 0), [['r1', 'w1', 'w2'], ['r2', 'w3', 'w4'], ['w5']])
  })

  test('reads (GET, HEAD) cost one unit, every other method two', () => {
    assert.equal(requestCost('GET'), 1)
    assert.equal(requestCost('HEAD'), 1)
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) assert.equal(requestCost(method), WRITE_COST)
    assert.equal(WRITE_COST, 2)
  })

  test('the hook starts twice as many reads a turn as writes', async () => {
    const app = Fastify()
    registerTurnBudget(app, 4)
    let turn = 0
    let ticking = true
    const tick = () => { turn++; if (ticking) setImmediate(tick) }
    const startedIn: Record<string, number[]> = { GET: [], POST: [] }
    app.route({ method: ['GET', 'POST'], url: '/', handler: async (request) => { startedIn[request.method]!.push(turn); return {} } })
    await app.ready()
    try {
      for (const method of ['GET', 'POST'] as const) {
        setImmediate(tick)
        ticking = true
        await Promise.all(Array.from({ length: 8 }, () => app.inject({ method, url: '/', payload: method === 'POST' ? {} : undefined })))
        ticking = false
      }
      const perTurn = (turns: number[]) => [...turns.reduce((counts, t) => counts.set(t, (counts.get(t) ?? 0) + 1), new Map<number, number>()).values()]
      assert.deepEqual(perTurn(startedIn.GET!), [4, 4])
      assert.deepEqual(perTurn(startedIn.POST!), [2, 2, 2, 2])
    } finally {
      await app.close()
    }
  })

  test('a server accepts new connections while a burst of requests is being worked through', async () => {
    // Each request takes 2 ms of synchronous work, as a busy route does. With a budget, a turn holds a few
    // of them, so the connections opened meanwhile are accepted turn by turn (libuv accepts one a turn).
    const app = Fastify()
    registerTurnBudget(app, 2)
    app.get('/', async () => {
      const until = performance.now() + 2
      while (performance.now() < until) { /* busy */ }
      return { ok: true }
    })
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = new URL(address)
    const accepted: number[] = []
    app.server.on('connection', () => accepted.push(performance.now()))
    const sockets: net.Socket[] = []
    const open = () => new Promise<net.Socket>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => resolve(socket)).on('error', reject)
      sockets.push(socket)
    })
    try {
      const busy = await Promise.all(Array.from({ length: 40 }, open))
      while (accepted.length < busy.length) await nextTurn()
      // 40 requests at once, then 8 new connections: all 8 are accepted before the 40 are answered.
      let answered = 0
      const allAnswered = new Promise<number>((resolve) => {
        for (const socket of busy) {
          socket.once('data', () => { if (++answered === busy.length) resolve(performance.now()) })
          socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        }
      })
      await nextTurn()
      await Promise.all(Array.from({ length: 8 }, open))
      const doneAt = await allAnswered
      const lateAccepts = accepted.slice(busy.length)
      assert.ok(lateAccepts.length === 8 && lateAccepts.every((at) => at < doneAt),
        `${lateAccepts.filter((at) => at < doneAt).length} of 8 new connections accepted while the burst was answered`)
    } finally {
      for (const socket of sockets) socket.destroy()
      await app.close()
    }
  })
})
