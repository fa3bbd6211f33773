import { useEffect, useState } from 'preact/hooks'
import { request } from '../api'
import { ErrorMessage } from '../components/Status'

/**
 * Asks for an API key and checks it with one read before keeping it. The key stays in this tab's
 * sessionStorage only (src/api.ts).
 */
export function SignIn({ onSignedIn }: { onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState('')
  const [error, setError] = useState<Error>()
  const [busy, setBusy] = useState(false)
  useEffect(() => { document.title = 'Sign in · Wishpay' }, [])

  const submit = async (event: SubmitEvent) => {
    event.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      await request('GET', '/wishes?limit=1', { key: key.trim() })
      onSignedIn(key.trim())
    } catch (e) {
      setError(e as Error)
      setBusy(false)
    }
  }

  return (
    <main id="main" class="sign-in">
      <h1>Wishpay dashboard</h1>
      <form onSubmit={submit}>
        <label>
          API key
          <input type="password" name="key" value={key} onInput={(e) => setKey(e.currentTarget.value)}
            autocomplete="off" spellcheck={false} required aria-describedby="key-hint" />
        </label>
        <p id="key-hint" class="hint">
          An <code>sk_</code> key can revoke and refund; an <code>rk_</code> key can only read.
          It is kept in this browser tab only, until you sign out or close the tab.
        </p>
        {error ? <ErrorMessage error={error} /> : null}
        <button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </main>
  )
}
