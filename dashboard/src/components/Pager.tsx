import type { ListPage } from '../api'
import { hrefWith, type Place } from '../router'

/** "1–10 of 23" and links to the previous and next pages (the list API's offset and meta.total). */
export function Pager({ meta, place, label }: { meta: ListPage<unknown>['meta'], place: Place, label: string }) {
  const { total, limit, offset } = meta
  const first = total === 0 ? 0 : offset + 1
  const last = Math.min(offset + limit, total)
  const previous = offset > 0 ? hrefWith(place.path, place.query, { offset: Math.max(0, offset - limit) || undefined }) : null
  const next = offset + limit < total ? hrefWith(place.path, place.query, { offset: offset + limit }) : null
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <span>{first}–{last} of {total}</span>
      {previous ? <a href={previous}>Previous page</a> : null}
      {next ? <a href={next}>Next page</a> : null}
    </nav>
  )
}
