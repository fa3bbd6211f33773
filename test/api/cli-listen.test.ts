import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { ROOT, runCli, WISHPAY_BIN } from '../helpers/cli.js'
import { call, createKeyWithCli, inAnHour, killServer, stopServer, waitFor } from '../helpers/processes.js'
import { type Receiver, startReceiver } from '../helpers/receiver.js'
import { type ServerProcess, startServer } from '../helpers/server.js'
import { storeKinds, type TestStore } from '../helpers/stores.js'

/**
 * The commands that talk to a running server (src/cli/): `wishpay listen` forwards a real payment's
 * events to a local receiver that verifies them with the printed secret, against a `wishpay serve`
 * without WEBHOOK_ALLOW_PRIVATE; `events tail` and `trigger` against the same server; `deliveries
 * resend` against an app that delivers to a local endpoint.
 */

interface Running {
  child: ChildProcess
  stdout(): string
  stderr(): string
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Starts a long-running `wishpay` command with exactly this environment (plus PATH). */
function startCli(args: string[], env: Record<string, string>): Running {
  const child = spawn(process.execPath, [WISHPAY_BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => { stdout += chunk })
  child.stderr!.on('data', (chunk) => { stderr += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: (signal = 'SIGINT') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
}

const until = <T>(probe: () => T | undefined | false, what: string, timeoutMs = 60_000) =>
  waitFor(async () => probe() || undefined, timeoutMs, what, 50)

for (const kind of storeKinds()) {
  describe(`wishpay listen, events tail, trigger against a running server (${kind.name})`, () => {
    let store: TestStore
    let server: ServerProcess
    let key = ''
    const children: Running[] = []
    const receivers: Receiver[] = []

    before(async () => {
      store = await kind.open()
      // No WEBHOOK_ALLOW_PRIVATE: listen forwards to a loopback receiver all the same.
      server = await startServer(store.env)
      key = (await createKeyWithCli(store.env, `listen-${kind.name}`)).key
    })
    after(async () => {
      for (const c of children) await c.stop('SIGKILL')
      for (const r of receivers) await r.close()
      try {
        assert.deepEqual(await stopServer(server), { code: 0, killed: false }, 'the server stops on SIGTERM with its streams open')
      } finally {
        await killServer(server)
        await store.close()
      }
    })

    const cli = (args: string[]) => {
      const running = startCli(args, { WISHPAY_API_KEY: key, WISHPAY_BASE_URL: server.url })
      children.push(running)
      return running
    }

    /** A wish, a single-use mandate for it and a card payment: wish.created, mandate.created, payment.created, payment.succeeded, mandate.consumed. */
    async function realPayment(): Promise<string> {
      const wish = await call(server.url, key, 'POST', '/wishes', { query: 'a lamp for the desk' })
      assert.equal(wish.status, 201, wish.raw)
      const mandate = await call(server.url, key, 'POST', '/mandates', { protocol: wish.body.data.protocol, wish_id: wish.body.data.id, max_amount: 5000, expires_at: inAnHour() })
      assert.equal(mandate.status, 201, mandate.raw)
      const payment = await call(server.url, key, 'POST', '/payments', { mandate_id: mandate.body.data.id, amount: 4200, payment_method: 'card', idempotency_key: `listen-${Date.now()}` })
      assert.equal(payment.status, 201, payment.raw)
      assert.equal(payment.body.data.status, 'succeeded')
      return payment.body.data.id as string
    }

    test('listen --forward-to forwards a real payment\'s events, signed with the printed secret, and exits 0 on SIGINT', async () => {
      const receiver = await startReceiver()
      receivers.push(receiver)
      const listen = cli(['listen', '--forward-to', `${receiver.origin}/hook`])
      await until(() => /Ready!/.test(listen.stdout()), `listen ready:\n${listen.stdout()}\n${listen.stderr()}`)
      const secret = /(whsec_[A-Za-z0-9+/=]+)/.exec(listen.stdout())?.[1]
      assert.ok(secret, listen.stdout())
      receiver.secret = secret

      const paymentId = await realPayment()
      const expected = ['wish.created', 'mandate.created', 'payment.created', 'payment.succeeded', 'mandate.consumed']
      await until(() => receiver.deliveries.length >= expected.length, `${expected.length} forwarded events:\n${listen.stdout()}`)
      for (const d of receiver.deliveries) {
        assert.equal(d.verifyError, null, `${d.headers['webhook-id']} verifies with the printed secret`)
        assert.equal(d.path, '/hook')
        const event = await call(server.url, key, 'GET', `/events/${d.headers['webhook-id']}`)
        assert.equal(d.body, JSON.stringify(event.body.data), 'the body is the event, as GET /events/:id and webhooks have it')
      }
      assert.deepEqual(receiver.deliveries.map((d) => JSON.parse(d.body).type).sort(), [...expected].sort())
      const succeeded = receiver.deliveries.find((d) => JSON.parse(d.body).type === 'payment.succeeded')!
      assert.equal(JSON.parse(succeeded.body).data.object.id, paymentId)
      await until(() => listen.stdout().split('\n').filter((l) => l.includes('--> [200]')).length === expected.length, 'one line per event with the receiver\'s status')
      assert.equal(await listen.stop('SIGINT'), 0)
      assert.equal(server.output().includes(secret), false, 'the server never sees nor logs the local secret')
    })

    test('listen --secret keeps a given secret; a bad one or a missing --forward-to is a usage error (exit 2)', async () => {
      const receiver = await startReceiver({ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' })
      receivers.push(receiver)
      const listen = cli(['listen', '--forward-to', receiver.url, '--secret', receiver.secret!, '--events', 'wish.created'])
      await until(() => /Ready!/.test(listen.stdout()), 'listen ready')
      assert.match(listen.stdout(), /whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/)
      await realPayment()
      await until(() => receiver.deliveries.length === 1, 'the wish.created event')
      assert.equal(receiver.deliveries[0]!.verified, true)
      assert.equal(JSON.parse(receiver.deliveries[0]!.body).type, 'wish.created')
      assert.equal(await listen.stop('SIGTERM'), 0)

      const env = { WISHPAY_API_KEY: key, WISHPAY_BASE_URL: server.url }
      assert.equal((await runCli(['listen', '--forward-to', receiver.url, '--secret', 'nope'], env)).code, 2)
      assert.equal((await runCli(['listen'], env)).code, 2)
      const noKey = await runCli(['listen', '--forward-to', receiver.url], { WISHPAY_BASE_URL: server.url })
      assert.equal(noKey.code, 2)
      assert.match(noKey.stderr, /WISHPAY_API_KEY/)
      const badKey = await runCli(['events', 'tail'], { WISHPAY_API_KEY: `sk_${'x'.repeat(40)}`, WISHPAY_BASE_URL: server.url })
      assert.equal(badKey.code, 1)
      assert.match(badKey.stderr, /invalid_api_key/)
    })

    test('trigger payment.succeeded makes a wish, a mandate and a payment; events tail --json prints its events as they happen', async () => {
      const tail = cli(['events', 'tail', '--json', '--types', 'payment.succeeded'])
      await until(() => /Following events/.test(tail.stderr()), `tail ready:\n${tail.stderr()}`)
      const triggered = await runCli(['trigger', 'payment.succeeded'], { WISHPAY_API_KEY: key, WISHPAY_BASE_URL: server.url })
      assert.equal(triggered.code, 0, triggered.stderr)
      const paymentId = /Created payment (pay_\w+) \(succeeded\)/.exec(triggered.stdout)?.[1]
      assert.ok(paymentId, triggered.stdout)
      assert.match(triggered.stdout, /Created wish wish_\w+/)
      assert.match(triggered.stdout, /Created mandate mdt_\w+/)
      const line = await until(() => tail.stdout().split('\n').find((l) => l.includes(paymentId)), `the payment.succeeded event:\n${tail.stdout()}`)
      const event = JSON.parse(line)
      assert.equal(event.type, 'payment.succeeded')
      assert.equal(event.data.object.id, paymentId)
      assert.equal(await tail.stop('SIGINT'), 0)
      assert.equal(tail.stdout().trim().split('\n').length, 1, 'only the filtered type')

      const unknown = await runCli(['trigger', 'payment.teleported'], { WISHPAY_API_KEY: key, WISHPAY_BASE_URL: server.url })
      assert.equal(unknown.code, 2, unknown.stderr)
      assert.match(unknown.stderr, /payment\.succeeded/)
    })
  })

  describe(`wishpay deliveries resend (${kind.name})`, () => {
    let t: TestApp
    let base: string
    let receiver: Receiver
    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' })
      base = await t.app.listen({ port: 0, host: '127.0.0.1' })
      receiver = await startReceiver()
    })
    after(async () => {
      await receiver.close()
      await t.close()
    })

    test('deliveries list shows an endpoint\'s attempts; deliveries resend sends one again, signed anew', async () => {
      const a = await t.account()
      const endpoint = (await a.request('POST', '/webhook_endpoints', { url: receiver.url, events: ['wish.created'] })).body.data
      receiver.secret = endpoint.secret
      await a.request('POST', '/wishes', { query: 'a resend' })
      await waitFor(async () => { await t.jobs.runOnce(); return receiver.deliveries.length === 1 ? true : undefined }, 20_000, 'the first delivery')
      const env = { WISHPAY_API_KEY: a.key, WISHPAY_BASE_URL: base }
      const listed = await runCli(['deliveries', 'list', endpoint.id, '--json'], env)
      assert.equal(listed.code, 0, listed.stderr)
      const [attempt] = JSON.parse(listed.stdout)
      const resent = await runCli(['deliveries', 'resend', attempt.id], env)
      assert.equal(resent.code, 0, resent.stderr)
      assert.match(resent.stdout, new RegExp(`Resending wish.created ${attempt.event_id} to ${endpoint.id}`))
      await waitFor(async () => { await t.jobs.runOnce(); return receiver.deliveries.length === 2 ? true : undefined }, 20_000, 'the second delivery')
      assert.deepEqual(receiver.ids(), [attempt.event_id, attempt.event_id])
      assert.ok(receiver.deliveries.every((d) => d.verified))

      const missing = await runCli(['deliveries', 'resend', 'wha_01jf3v7k8m2n4p6q8r0s2t4v6w'], env)
      assert.equal(missing.code, 1)
      assert.match(missing.stderr, /resource_missing/)
    })
  })
}
