import { list } from '../api'
import { Filters, SelectFilter, TextFilter } from '../components/Filters'
import { Page } from '../components/Page'
import { Pager } from '../components/Pager'
import { Loading } from '../components/Status'
import { MandateTable } from '../components/Tables'
import { useLoad } from '../hooks'
import type { Place } from '../router'
import { MANDATE_STATUSES, type Mandate } from '../types'

export function Mandates({ place }: { place: Place }) {
  const q = (name: string) => place.query.get(name) ?? undefined
  const mandates = useLoad(() => list<Mandate>('/mandates', { status: q('status'), wish_id: q('wish_id'), offset: q('offset') }), place.query.toString())
  return (
    <Page title="Mandates">
      <Filters place={place} label="Filter mandates">
        <SelectFilter name="status" label="Status" options={MANDATE_STATUSES} place={place} />
        <TextFilter name="wish_id" label="Wish id" place={place} placeholder="wish_…" />
      </Filters>
      <Loading loaded={mandates}>
        {(page) => (
          <>
            <MandateTable mandates={page.data} caption="Mandates, newest first" />
            <Pager meta={page.meta} place={place} label="Mandates" />
          </>
        )}
      </Loading>
    </Page>
  )
}
