import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ErrorMessage } from './Status'

interface Props {
  title: string
  confirmLabel: string
  children: ComponentChildren
  /** The action, run once per confirmation; its failure is shown in the dialog. */
  onConfirm: () => Promise<void>
  onClose: () => void
}

/**
 * A modal confirmation (the browser's <dialog>: focus moves into it and stays there, Escape cancels).
 * The action runs only from the confirm button, and cannot be started twice while it runs.
 */
export function ConfirmDialog({ title, confirmLabel, children, onConfirm, onClose }: Props) {
  const dialog = useRef<HTMLDialogElement>(null)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<Error>()
  useEffect(() => {
    dialog.current?.showModal()
  }, [])

  const confirm = async () => {
    setBusy(true)
    setError(undefined)
    try {
      await onConfirm()
      onClose()
    } catch (e) {
      setError(e as Error)
      setBusy(false)
    }
  }

  return (
    <dialog ref={dialog} aria-labelledby="confirm-title" onClose={onClose}>
      <h2 id="confirm-title">{title}</h2>
      {children}
      {error ? <ErrorMessage error={error} /> : null}
      <div class="actions">
        <button type="button" class="secondary" onClick={() => dialog.current?.close()} disabled={busy}>Cancel</button>
        <button type="button" class="danger" onClick={confirm} disabled={busy}>{busy ? 'Working…' : confirmLabel}</button>
      </div>
    </dialog>
  )
}
