import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'

// A full collection between measurements, without starting the test process with --expose-gc.
v8.setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** The heap in use after two full collections: what is still reachable, for tests of a cache's bound. */
export function heapUsed(): number {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}
