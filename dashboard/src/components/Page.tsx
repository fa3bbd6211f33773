import type { ComponentChildren } from 'preact'
import { useEffect } from 'preact/hooks'

/** A page's heading, which is also the document's title; it takes the focus after a navigation (see App). */
export function Page({ title, children }: { title: string, children: ComponentChildren }) {
  useEffect(() => { document.title = `${title} · Wishpay` }, [title])
  return (
    <>
      <h1 tabIndex={-1}>{title}</h1>
      {children}
    </>
  )
}

/** A term-description list of an object's fields. */
export function Fields({ rows }: { rows: Array<[string, ComponentChildren]> }) {
  return (
    <dl class="fields">
      {rows.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  )
}
