/** The floor for HTTP scenarios: a minimal Fastify app answering JSON, started by the harness. */
import Fastify from 'fastify'

const app = Fastify({ logger: false })
const body = { data: { id: 'pay_01jf3v7k8m2n4p6q8r0s2t4v6w', status: 'succeeded', amount: 100, currency: 'USD' } }
app.get('/*', async () => body)
app.post('/*', async (_request, reply) => reply.code(201).send(body))
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
process.stdout.write(`${JSON.stringify({ msg: 'hello listening', address })}\n`)
process.once('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
