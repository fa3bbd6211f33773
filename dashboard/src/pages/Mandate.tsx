import { useState } from 'preact/hooks'
import { get, list, post } from '../api'
import { BudgetMeter } from '../components/BudgetMeter'
import { ConfirmDialog } from '../components/ConfirmDialog'
import { IdLink } from '../components/IdLink'
import { Fields, Page } from '../components/Page'
import { Badge, Loading } from '../components/Status'
import { PaymentTable } from '../components/Tables'
import { formatDate, formatMoney } from '../format'
import { useLoad } from '../hooks'
import { BASE } from '../router'
import type { Mandate as MandateObject, Payment } from '../types'

/** A mandate: its budget, its payments, and revoking it. */
export function Mandate({ id }: { id: string }) {
  const mandate = useLoad(() => get<MandateObject>(`/mandates/${id}`), id)
  const payments = useLoad(() => list<Payment>('/payments', { mandate_id: id, limit: 100 }), id)
  const [confirming, setConfirming] = useState(false)
  return (
    <Page title={`Mandate ${id}`}>
      <Loading loaded={mandate}>
        {(m) => (
          <>
            <Fields rows={[
              ['Status', <Badge status={m.status} />],
              ['Budget used', <BudgetMeter mandate={m} />],
              ['Cap per payment', formatMoney(m.max_amount, m.currency)],
              ['Usage', `${m.usage.replace('_', ' ')}, used ${m.uses_count} ${m.uses_count === 1 ? 'time' : 'times'}`],
              ['Protocol', m.protocol],
              ['Wish', <IdLink id={m.wish_id} />],
              ['Agent', m.agent_id ? <code>{m.agent_id}</code> : '—'],
              ['Expires', formatDate(m.expires_at)],
              ['Created', formatDate(m.created_at)],
              ['Revoked', formatDate(m.revoked_at)],
            ]} />
            {m.status === 'active'
              ? <p><button type="button" class="danger" onClick={() => setConfirming(true)}>Revoke mandate</button></p>
              : null}
            {confirming
              ? (
                <ConfirmDialog
                  title="Revoke this mandate?"
                  confirmLabel="Revoke"
                  onConfirm={async () => { await post(`/mandates/${id}/revoke`); mandate.reload() }}
                  onClose={() => setConfirming(false)}
                >
                  <p>Agents will no longer be able to pay with <code>{id}</code>. This cannot be undone.</p>
                </ConfirmDialog>
              )
              : null}
          </>
        )}
      </Loading>
      <section aria-labelledby="mandate-payments">
        <h2 id="mandate-payments">Payments</h2>
        <Loading loaded={payments}>{(page) => <PaymentTable payments={page.data} caption="Payments with this mandate" />}</Loading>
        <p><a href={`${BASE}/payments?mandate_id=${id}`}>All payments with this mandate</a></p>
      </section>
    </Page>
  )
}
