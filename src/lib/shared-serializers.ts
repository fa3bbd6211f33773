import { createHash } from 'node:crypto'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'

type SerializerFactory = ReturnType<typeof SerializerSelector>
type Serializer = ReturnType<ReturnType<SerializerFactory>>

const digest = (text: string) => createHash('sha256').update(text).digest('base64')

/**
 * Fastify's serializer factory (fast-json-stringify, as Fastify builds it by default), compiling each
 * distinct response schema once per process instead of once per route, status and method.
 *
 * Fastify compiles a serializer for every status of every route, HEAD twins included, and every route
 * lists the same error statuses (src/http/openapi.ts completes them), so a server held about 800
 * compiled serializers, most of them the same few error envelopes: each keeps its generated source
 * (about 10 KB) and code on the heap, some 10 MB in all. A serializer is a pure function of its schema,
 * the shared schemas it may reference and the options, so routes with equal ones share one.
 * The map holds one entry per distinct schema of the application, a fixed set known at start-up.
 */
export function sharedSerializerFactory(): SerializerFactory {
  const build = SerializerSelector()
  const compiled = new Map<string, Serializer>()
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options)
    // What a schema's $refs resolve against: equal in every plugin context that adds no schema.
    const context = digest(JSON.stringify([externalSchemas ?? null, options ?? null]))
    return (route) => {
      const key = `${context} ${digest(JSON.stringify(route.schema ?? null))}`
      let serializer = compiled.get(key)
      if (serializer === undefined) compiled.set(key, serializer = compile(route))
      return serializer
    }
  }
}

/** The server option that installs it: `Fastify({ schemaController: sharedSerializers })`. */
export const sharedSerializers: NonNullable<FastifyServerOptions['schemaController']> = {
  compilersFactory: { buildSerializer: sharedSerializerFactory() },
}
