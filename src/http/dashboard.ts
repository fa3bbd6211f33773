import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply } from 'fastify'

/** Where `npm run build:dashboard` writes the dashboard (dashboard/vite.config.ts); the same from src/ and dist/. */
export const DASHBOARD_DIST = fileURLToPath(new URL('../../dashboard/dist/', import.meta.url))

/**
 * Files from this server only, no inline script or style, no framing; the API is on the same origin.
 * `style-src 'self'` still lets the app's script set element styles through the DOM.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

const MISSING_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Wishpay dashboard not built</title></head>
<body><main><h1>The dashboard is not built</h1>
<p>Run <code>npm run build:dashboard</code> (or <code>npm run build</code>) in the Wishpay checkout, then reload this page.
<code>npm start</code> builds it when it is missing.</p></main></body></html>
`

function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('Content-Security-Policy', CONTENT_SECURITY_POLICY)
    .header('Referrer-Policy', 'no-referrer')
    .header('Cross-Origin-Opener-Policy', 'same-origin')
}

/** A file of the build: a path whose last segment has an extension (assets/index-3f2a.js, favicon.svg). */
const isFile = (rest: string) => /\.[a-z0-9]+$/i.test(rest)

/**
 * The dashboard at /dashboard/: the built files, and the app's page for every other path under it
 * (the app routes on the client, dashboard/src/router.ts). Hidden from the OpenAPI document: it is not
 * part of the API. Without a build it answers a page that says how to make one.
 */
export async function dashboardRoutes(app: FastifyInstance, options: { root?: string } = {}): Promise<void> {
  const root = options.root ?? DASHBOARD_DIST
  const index = path.join(root, 'index.html')
  // Only reply.sendFile (serve: false): the routes below decide what each path answers. send's own
  // Cache-Control is off, as each answer sets its own.
  await app.register(fastifyStatic, { root, serve: false, cacheControl: false })

  const answer = async (rest: string, reply: FastifyReply) => {
    securityHeaders(reply)
    // Checked per request, so a build made while the server runs is served at once.
    if (!fs.existsSync(index)) return reply.code(503).type('text/html; charset=utf-8').send(MISSING_PAGE)
    reply.header('Cache-Control', 'no-cache')
    return reply.sendFile(isFile(rest) ? rest : 'index.html')
  }
  // Built assets have content hashes in their names: once found, they never change.
  app.addHook('onSend', async (request, reply) => {
    if (reply.statusCode === 200 && request.url.startsWith('/dashboard/assets/')) reply.header('Cache-Control', 'public, max-age=31536000, immutable')
  })

  const schema = { hide: true }
  app.get('/dashboard', { schema }, (_request, reply) => answer('', reply))
  app.get<{ Params: { '*': string } }>('/dashboard/*', { schema }, (request, reply) => answer(request.params['*'], reply))
}
