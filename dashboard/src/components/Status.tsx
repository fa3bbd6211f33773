import type { Loaded } from '../hooks'

/** A status word as a badge; the word itself carries the meaning, the colour only repeats it. */
export function Badge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status}</span>
}

export function ErrorMessage({ error }: { error: Error }) {
  return <p class="error" role="alert">{error.message}</p>
}

/** Loading and failure of a load; the children render once it has data. */
export function Loading<T>({ loaded, children }: { loaded: Loaded<T>, children: (data: T) => preact.ComponentChildren }) {
  if (loaded.error) return <ErrorMessage error={loaded.error} />
  if (loaded.data === undefined) return <p role="status">Loading…</p>
  return <>{children(loaded.data)}</>
}
