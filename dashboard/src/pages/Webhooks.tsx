import { list } from '../api'
import { Page } from '../components/Page'
import { Pager } from '../components/Pager'
import { Badge, Loading } from '../components/Status'
import { formatDate } from '../format'
import { useLoad } from '../hooks'
import type { Place } from '../router'
import type { WebhookEndpoint } from '../types'

/** Webhook endpoints; each links to its deliveries (the API lists deliveries per endpoint). */
export function Webhooks({ place }: { place: Place }) {
  const endpoints = useLoad(() => list<WebhookEndpoint>('/webhook_endpoints', { offset: place.query.get('offset') ?? undefined }), place.query.toString())
  return (
    <Page title="Webhook endpoints">
      <Loading loaded={endpoints}>
        {(page) => (
          <>
            {page.data.length === 0
              ? <p class="empty">No webhook endpoints. Create one with <code>POST /webhook_endpoints</code>.</p>
              : (
                <div class="table">
                  <table>
                    <caption>Webhook endpoints and their deliveries</caption>
                    <thead><tr><th scope="col">URL</th><th scope="col">State</th><th scope="col" class="wide">Events</th><th scope="col" class="wide">Created</th></tr></thead>
                    <tbody>
                      {page.data.map((w) => (
                        <tr key={w.id}>
                          <td><a href={`/dashboard/webhooks/${w.id}`}>{w.url}</a></td>
                          <td><Badge status={w.enabled ? 'enabled' : 'disabled'} /></td>
                          <td class="wide">{w.events.join(', ')}</td>
                          <td class="wide">{formatDate(w.created_at)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            <Pager meta={page.meta} place={place} label="Webhook endpoints" />
          </>
        )}
      </Loading>
    </Page>
  )
}
