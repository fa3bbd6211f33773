import { executionAsyncResource } from 'node:async_hooks'

/**
 * Keeps one `process.nextTick` queue entry alive for the life of the process, so that V8 never forgets
 * the entries' shape. Imported first by cli.ts, before anything else runs.
 *
 * Node makes each entry as an object literal whose first two keys are computed (symbols): `{
 * [async_id_symbol], [trigger_async_id_symbol], callback, args }`. `nextTick`'s inline caches hold the
 * literal's intermediate shapes (maps) weakly. When the server idles after starting, no entry is alive,
 * and a full GC collects those maps. The next entry, made by the first request, finds the caches cleared,
 * and they turn megamorphic for good. From then on V8's runtime adds every entry's last properties
 * (`DefineKeyedOwnPropertyInLiteral`), about 0.5 µs a call instead of 0.1. A request makes about nine
 * calls, so that is 3-4 µs of every request (docs/performance.md, twentieth pass). One live entry keeps
 * the maps, so the caches stay monomorphic. `executionAsyncResource()` inside a tick is that tick's entry.
 * The service sets the flag that call sets anyway: AsyncLocalStorage (db/transaction-guard.ts) calls
 * it too.
 */
let kept: object | undefined
process.nextTick(() => { kept = executionAsyncResource() })

/** The entry kept alive, once the first tick has run (for the test). */
export function keptTickEntry(): object | undefined {
  return kept
}
