import { formatDate, formatMajor, formatMoney } from '../format'
import type { Mandate, Payment, Wish } from '../types'
import { BudgetMeter } from './BudgetMeter'
import { IdLink } from './IdLink'
import { Badge } from './Status'

/** The lists of wishes, mandates and payments, shared by their own pages and the pages of related objects. */

function Empty({ what }: { what: string }) {
  return <p class="empty">No {what}.</p>
}

export function WishTable({ wishes, caption }: { wishes: Wish[], caption: string }) {
  if (wishes.length === 0) return <Empty what="wishes" />
  return (
    <div class="table">
      <table>
        <caption>{caption}</caption>
        <thead><tr><th scope="col">Wish</th><th scope="col">Query</th><th scope="col">Status</th><th scope="col" class="wide">Budget</th><th scope="col" class="wide">Created</th></tr></thead>
        <tbody>
          {wishes.map((w) => (
            <tr key={w.id}>
              <td><IdLink id={w.id} /></td>
              <td>{w.query}</td>
              <td><Badge status={w.status} /></td>
              <td class="wide">{w.budget ? formatMajor(w.budget.max, w.budget.currency) : '—'}</td>
              <td class="wide">{formatDate(w.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

export function MandateTable({ mandates, caption }: { mandates: Mandate[], caption: string }) {
  if (mandates.length === 0) return <Empty what="mandates" />
  return (
    <div class="table">
      <table>
        <caption>{caption}</caption>
        <thead><tr><th scope="col">Mandate</th><th scope="col">Status</th><th scope="col">Budget used</th><th scope="col" class="wide">Wish</th><th scope="col" class="wide">Expires</th></tr></thead>
        <tbody>
          {mandates.map((m) => (
            <tr key={m.id}>
              <td><IdLink id={m.id} /></td>
              <td><Badge status={m.status} /></td>
              <td><BudgetMeter mandate={m} /></td>
              <td class="wide"><IdLink id={m.wish_id} /></td>
              <td class="wide">{formatDate(m.expires_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

export function PaymentTable({ payments, caption }: { payments: Payment[], caption: string }) {
  if (payments.length === 0) return <Empty what="payments" />
  return (
    <div class="table">
      <table>
        <caption>{caption}</caption>
        <thead><tr><th scope="col">Payment</th><th scope="col">Amount</th><th scope="col">Status</th><th scope="col" class="wide">Refunded</th><th scope="col" class="wide">Mandate</th><th scope="col" class="wide">Created</th></tr></thead>
        <tbody>
          {payments.map((p) => (
            <tr key={p.id}>
              <td><IdLink id={p.id} /></td>
              <td class="number">{formatMoney(p.amount, p.currency)}</td>
              <td><Badge status={p.status} /></td>
              <td class="wide number">{p.amount_refunded > 0 ? formatMoney(p.amount_refunded, p.currency) : '—'}</td>
              <td class="wide"><IdLink id={p.mandate_id} /></td>
              <td class="wide">{formatDate(p.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
