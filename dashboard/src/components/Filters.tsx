import type { ComponentChildren } from 'preact'
import { hrefWith, navigate, type Place } from '../router'

/**
 * A search form whose named fields become the page's query (and so the list API's filters); a new
 * filter starts again at the first page.
 */
export function Filters({ place, label, children }: { place: Place, label: string, children: ComponentChildren }) {
  const submit = (event: SubmitEvent) => {
    event.preventDefault()
    const changes: Record<string, string> = {}
    for (const [name, value] of new FormData(event.currentTarget as HTMLFormElement)) changes[name] = String(value).trim()
    navigate(hrefWith(place.path, place.query, { ...changes, offset: undefined }))
  }
  return (
    <form role="search" aria-label={label} class="filters" onSubmit={submit}>
      {children}
      <button type="submit">Filter</button>
    </form>
  )
}

/** A labelled select of a filter; "any" is the empty value. */
export function SelectFilter({ name, label, options, place }: { name: string, label: string, options: string[], place: Place }) {
  return (
    <label>
      {label}
      <select name={name} value={place.query.get(name) ?? ''}>
        <option value="">any</option>
        {options.map((o) => <option key={o} value={o}>{o}</option>)}
      </select>
    </label>
  )
}

/** A labelled text filter (an id). */
export function TextFilter({ name, label, place, placeholder }: { name: string, label: string, place: Place, placeholder?: string }) {
  return (
    <label>
      {label}
      <input name={name} value={place.query.get(name) ?? ''} placeholder={placeholder} autocomplete="off" spellcheck={false} />
    </label>
  )
}
