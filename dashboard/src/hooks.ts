import { useCallback, useEffect, useState } from 'preact/hooks'

export interface Loaded<T> {
  data: T | undefined
  error: Error | undefined
  loading: boolean
  reload: () => void
}

/** Runs `load` whenever `key` changes (and on reload()); a slower, older answer never replaces a newer one. */
export function useLoad<T>(load: () => Promise<T>, key: string): Loaded<T> {
  const [state, setState] = useState<{ data?: T, error?: Error, loading: boolean }>({ loading: true })
  const [round, setRound] = useState(0)
  useEffect(() => {
    let current = true
    setState((s) => ({ ...s, loading: true }))
    load().then(
      (data) => { if (current) setState({ data, loading: false }) },
      (error: Error) => { if (current) setState({ error, loading: false }) },
    )
    return () => { current = false }
    // `key` names everything `load` depends on.
  }, [key, round])
  const reload = useCallback(() => setRound((r) => r + 1), [])
  return { data: state.data, error: state.error, loading: state.loading, reload }
}
