import { useState } from 'preact/hooks'
import { get, list, post } from '../api'
import { ConfirmDialog } from '../components/ConfirmDialog'
import { IdLink } from '../components/IdLink'
import { Fields, Page } from '../components/Page'
import { Badge, Loading } from '../components/Status'
import { formatDate, formatMoney, parseMajor } from '../format'
import { useLoad } from '../hooks'
import type { Payment as PaymentObject, Refund } from '../types'

/** A payment, its refunds, and refunding it in full or in part. */
export function Payment({ id }: { id: string }) {
  const payment = useLoad(() => get<PaymentObject>(`/payments/${id}`), id)
  const refunds = useLoad(() => list<Refund>(`/payments/${id}/refunds`, { limit: 100 }), id)
  const reload = () => { payment.reload(); refunds.reload() }
  return (
    <Page title={`Payment ${id}`}>
      <Loading loaded={payment}>
        {(p) => (
          <>
            <Fields rows={[
              ['Amount', formatMoney(p.amount, p.currency)],
              ['Status', <Badge status={p.status} />],
              ['Refunded', formatMoney(p.amount_refunded, p.currency)],
              ['Method', p.payment_method],
              ['Protocol', p.protocol_type],
              ['Mandate', <IdLink id={p.mandate_id} />],
              ['Wish', <IdLink id={p.wish_id} />],
              ...(p.failure_code ? [['Failure', `${p.failure_code}: ${p.failure_message ?? ''}`] as [string, string]] : []),
              ['Created', formatDate(p.created_at)],
              ['Updated', formatDate(p.updated_at)],
            ]} />
            {p.status === 'succeeded' && p.amount_refunded < p.amount ? <RefundForm payment={p} onRefunded={reload} /> : null}
          </>
        )}
      </Loading>
      <section aria-labelledby="payment-refunds">
        <h2 id="payment-refunds">Refunds</h2>
        <Loading loaded={refunds}>
          {(page) => page.data.length === 0
            ? <p class="empty">No refunds.</p>
            : (
              <ul class="refunds">
                {page.data.map((r) => (
                  <li key={r.id}>
                    <code>{r.id}</code>: {formatMoney(r.amount, payment.data?.currency ?? 'USD')}, {formatDate(r.created_at)}{r.reason ? `, ${r.reason}` : ''}
                  </li>
                ))}
              </ul>
            )}
        </Loading>
      </section>
    </Page>
  )
}

/** The amount (blank: all that remains) and reason of a refund, sent after a confirmation. */
function RefundForm({ payment, onRefunded }: { payment: PaymentObject, onRefunded: () => void }) {
  const remaining = payment.amount - payment.amount_refunded
  const [amountText, setAmountText] = useState('')
  const [reason, setReason] = useState('')
  const [invalid, setInvalid] = useState<string>()
  const [confirming, setConfirming] = useState<number | null>(null)

  const submit = (event: SubmitEvent) => {
    event.preventDefault()
    const amount = amountText.trim() === '' ? remaining : parseMajor(amountText, payment.currency)
    if (amount === null || amount <= 0) return setInvalid(`Enter an amount in ${payment.currency}, such as ${formatMoney(remaining, payment.currency).replace(/[^\d.]/g, '')}.`)
    if (amount > remaining) return setInvalid(`At most ${formatMoney(remaining, payment.currency)} remains to refund.`)
    setInvalid(undefined)
    setConfirming(amount)
  }

  return (
    <section aria-labelledby="refund-heading" class="panel">
      <h2 id="refund-heading">Refund</h2>
      <form onSubmit={submit} noValidate>
        <label>
          Amount ({payment.currency})
          <input name="amount" inputMode="decimal" value={amountText} onInput={(e) => setAmountText(e.currentTarget.value)}
            placeholder={`all: ${formatMoney(remaining, payment.currency)}`} aria-describedby="refund-hint refund-invalid" aria-invalid={invalid ? 'true' : undefined} />
        </label>
        <p id="refund-hint" class="hint">Leave blank to refund all that remains ({formatMoney(remaining, payment.currency)}).</p>
        <label>
          Reason (optional)
          <input name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} maxLength={500} />
        </label>
        <p id="refund-invalid" class="error" role="alert">{invalid ?? ''}</p>
        <button type="submit">Refund…</button>
      </form>
      {confirming !== null
        ? (
          <ConfirmDialog
            title="Refund this payment?"
            confirmLabel={`Refund ${formatMoney(confirming, payment.currency)}`}
            onConfirm={async () => {
              await post(`/payments/${payment.id}/refunds`, { amount: confirming, ...(reason.trim() ? { reason: reason.trim() } : {}) })
              setAmountText('')
              setReason('')
              onRefunded()
            }}
            onClose={() => setConfirming(null)}
          >
            <p>{formatMoney(confirming, payment.currency)} of <code>{payment.id}</code> goes back to the payer. Refunds do not restore the mandate's budget.</p>
          </ConfirmDialog>
        )
        : null}
    </section>
  )
}
