import { list } from '../api'
import { Filters, SelectFilter, TextFilter } from '../components/Filters'
import { Page } from '../components/Page'
import { Pager } from '../components/Pager'
import { Loading } from '../components/Status'
import { PaymentTable } from '../components/Tables'
import { useLoad } from '../hooks'
import type { Place } from '../router'
import { PAYMENT_STATUSES, type Payment } from '../types'

export function Payments({ place }: { place: Place }) {
  const q = (name: string) => place.query.get(name) ?? undefined
  const payments = useLoad(
    () => list<Payment>('/payments', { status: q('status'), mandate_id: q('mandate_id'), wish_id: q('wish_id'), offset: q('offset') }),
    place.query.toString(),
  )
  return (
    <Page title="Payments">
      <Filters place={place} label="Filter payments">
        <SelectFilter name="status" label="Status" options={PAYMENT_STATUSES} place={place} />
        <TextFilter name="mandate_id" label="Mandate id" place={place} placeholder="mdt_…" />
        <TextFilter name="wish_id" label="Wish id" place={place} placeholder="wish_…" />
      </Filters>
      <Loading loaded={payments}>
        {(page) => (
          <>
            <PaymentTable payments={page.data} caption="Payments, newest first" />
            <Pager meta={page.meta} place={place} label="Payments" />
          </>
        )}
      </Loading>
    </Page>
  )
}
