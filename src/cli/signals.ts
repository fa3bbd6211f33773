/**
 * Runs a command that goes on until stopped: SIGINT (^C) or SIGTERM aborts its signal, and once it has
 * wound down the command ends normally, so the process exits 0.
 */
export async function untilStopped(run: (signal: AbortSignal) => Promise<void>): Promise<void> {
  const stop = new AbortController()
  const abort = () => stop.abort()
  process.once('SIGINT', abort)
  process.once('SIGTERM', abort)
  try {
    await run(stop.signal)
  } finally {
    process.off('SIGINT', abort)
    process.off('SIGTERM', abort)
  }
}
