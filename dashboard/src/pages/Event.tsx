import { get } from '../api'
import { IdLink } from '../components/IdLink'
import { Fields, Page } from '../components/Page'
import { Loading } from '../components/Status'
import { formatDate } from '../format'
import { useLoad } from '../hooks'
import type { WishpayEvent } from '../types'

/** An event: what changed, the object as it was right after, and the request that changed it. */
export function Event({ id }: { id: string }) {
  const event = useLoad(() => get<WishpayEvent>(`/events/${id}`), id)
  return (
    <Page title={`Event ${id}`}>
      <Loading loaded={event}>
        {(e) => (
          <>
            <Fields rows={[
              ['Type', e.type],
              ['Object', <IdLink id={e.data.object.id ?? null} />],
              ['Request', e.request_id ? <code>{e.request_id}</code> : 'background work'],
              ['Created', formatDate(e.created_at)],
            ]} />
            <h2 id="event-json">As delivered to webhooks</h2>
            <pre class="json" tabIndex={0} aria-labelledby="event-json"><code>{JSON.stringify(e, null, 2)}</code></pre>
          </>
        )}
      </Loading>
    </Page>
  )
}
