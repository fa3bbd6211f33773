import { list } from '../api'
import { Filters, SelectFilter } from '../components/Filters'
import { IdLink } from '../components/IdLink'
import { Page } from '../components/Page'
import { Pager } from '../components/Pager'
import { Loading } from '../components/Status'
import { formatDate } from '../format'
import { useLoad } from '../hooks'
import type { Place } from '../router'
import { EVENT_TYPES, type WishpayEvent } from '../types'

export function Events({ place }: { place: Place }) {
  const q = (name: string) => place.query.get(name) ?? undefined
  const events = useLoad(() => list<WishpayEvent>('/events', { type: q('type'), offset: q('offset') }), place.query.toString())
  return (
    <Page title="Events">
      <Filters place={place} label="Filter events">
        <SelectFilter name="type" label="Type" options={EVENT_TYPES} place={place} />
      </Filters>
      <Loading loaded={events}>
        {(page) => (
          <>
            {page.data.length === 0
              ? <p class="empty">No events.</p>
              : (
                <div class="table">
                  <table>
                    <caption>Events, newest first</caption>
                    <thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col" class="wide">Object</th><th scope="col" class="wide">Created</th></tr></thead>
                    <tbody>
                      {page.data.map((e) => (
                        <tr key={e.id}>
                          <td><IdLink id={e.id} /></td>
                          <td>{e.type}</td>
                          <td class="wide"><IdLink id={e.data.object.id ?? null} /></td>
                          <td class="wide">{formatDate(e.created_at)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            <Pager meta={page.meta} place={place} label="Events" />
          </>
        )}
      </Loading>
    </Page>
  )
}
