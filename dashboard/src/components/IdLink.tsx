import { objectPath } from '../format'

/** An object's id, as a link to its page when it has one. */
export function IdLink({ id, label }: { id: string | null, label?: string }) {
  if (id === null) return <span>—</span>
  const path = objectPath(id)
  const text = <code>{id}</code>
  return path ? <a href={path} aria-label={label}>{text}</a> : text
}
