import { get, list } from '../api'
import { IdLink } from '../components/IdLink'
import { Fields, Page } from '../components/Page'
import { Pager } from '../components/Pager'
import { Badge, Loading } from '../components/Status'
import { formatDate } from '../format'
import { useLoad } from '../hooks'
import type { Place } from '../router'
import type { DeliveryAttempt, WebhookEndpoint as Endpoint } from '../types'

/** A webhook endpoint and its delivery attempts, newest first, each linking to its event. */
export function WebhookEndpoint({ id, place }: { id: string, place: Place }) {
  const endpoint = useLoad(() => get<Endpoint>(`/webhook_endpoints/${id}`), id)
  const offset = place.query.get('offset') ?? undefined
  const deliveries = useLoad(() => list<DeliveryAttempt>(`/webhook_endpoints/${id}/deliveries`, { offset }), `${id}?${offset}`)
  return (
    <Page title={`Webhook endpoint ${id}`}>
      <Loading loaded={endpoint}>
        {(w) => (
          <Fields rows={[
            ['URL', <code>{w.url}</code>],
            ['State', <>{<Badge status={w.enabled ? 'enabled' : 'disabled'} />}{w.disabled_reason ? ` (${w.disabled_reason})` : ''}</>],
            ['Events', w.events.join(', ')],
            ['Description', w.description ?? '—'],
            ['Created', formatDate(w.created_at)],
          ]} />
        )}
      </Loading>
      <section aria-labelledby="deliveries">
        <h2 id="deliveries">Deliveries</h2>
        <Loading loaded={deliveries}>
          {(page) => (
            <>
              {page.data.length === 0
                ? <p class="empty">No deliveries yet.</p>
                : (
                  <div class="table">
                    <table>
                      <caption>Delivery attempts, newest first</caption>
                      <thead><tr><th scope="col">Event</th><th scope="col">Result</th><th scope="col" class="wide">Attempt</th><th scope="col" class="wide">Next retry</th><th scope="col" class="wide">At</th></tr></thead>
                      <tbody>
                        {page.data.map((d) => (
                          <tr key={d.id}>
                            <td><IdLink id={d.event_id} /> <span class="muted">{d.event_type}</span></td>
                            <td><Badge status={d.succeeded ? 'delivered' : 'failed'} /> {d.status_code ?? d.error ?? ''}</td>
                            <td class="wide">{d.attempt}</td>
                            <td class="wide">{formatDate(d.next_retry_at)}</td>
                            <td class="wide">{formatDate(d.created_at)}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </div>
                )}
              <Pager meta={page.meta} place={place} label="Deliveries" />
            </>
          )}
        </Loading>
      </section>
    </Page>
  )
}
