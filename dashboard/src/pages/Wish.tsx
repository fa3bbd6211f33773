import { get, list } from '../api'
import { Fields, Page } from '../components/Page'
import { Badge, Loading } from '../components/Status'
import { MandateTable, PaymentTable } from '../components/Tables'
import { formatDate, formatMajor } from '../format'
import { useLoad } from '../hooks'
import { BASE } from '../router'
import type { Mandate, Payment, Wish as WishObject } from '../types'

/** A wish, with the mandates granted for it and the payments made for it. */
export function Wish({ id }: { id: string }) {
  const wish = useLoad(() => get<WishObject>(`/wishes/${id}`), id)
  const mandates = useLoad(() => list<Mandate>('/mandates', { wish_id: id, limit: 100 }), id)
  const payments = useLoad(() => list<Payment>('/payments', { wish_id: id, limit: 100 }), id)
  return (
    <Page title={`Wish ${id}`}>
      <Loading loaded={wish}>
        {(w) => (
          <Fields rows={[
            ['Query', w.query],
            ['Status', <Badge status={w.status} />],
            ['Budget', w.budget ? formatMajor(w.budget.max, w.budget.currency) : 'none'],
            ['Protocol', w.protocol],
            ['Category', w.category ?? '—'],
            ['Expires', formatDate(w.expires_at)],
            ['Created', formatDate(w.created_at)],
            ['Updated', formatDate(w.updated_at)],
          ]} />
        )}
      </Loading>
      <section aria-labelledby="wish-mandates">
        <h2 id="wish-mandates">Mandates</h2>
        <Loading loaded={mandates}>{(page) => <MandateTable mandates={page.data} caption="Mandates of this wish" />}</Loading>
        <p><a href={`${BASE}/mandates?wish_id=${id}`}>All mandates of this wish</a></p>
      </section>
      <section aria-labelledby="wish-payments">
        <h2 id="wish-payments">Payments</h2>
        <Loading loaded={payments}>{(page) => <PaymentTable payments={page.data} caption="Payments for this wish" />}</Loading>
        <p><a href={`${BASE}/payments?wish_id=${id}`}>All payments for this wish</a></p>
      </section>
    </Page>
  )
}
