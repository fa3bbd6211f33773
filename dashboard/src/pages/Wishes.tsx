import { list } from '../api'
import { Filters, SelectFilter } from '../components/Filters'
import { Page } from '../components/Page'
import { Pager } from '../components/Pager'
import { Loading } from '../components/Status'
import { WishTable } from '../components/Tables'
import { useLoad } from '../hooks'
import type { Place } from '../router'
import { WISH_STATUSES, type Wish } from '../types'

export function Wishes({ place }: { place: Place }) {
  const query = { status: place.query.get('status') ?? undefined, offset: place.query.get('offset') ?? undefined }
  const wishes = useLoad(() => list<Wish>('/wishes', query), place.query.toString())
  return (
    <Page title="Wishes">
      <Filters place={place} label="Filter wishes">
        <SelectFilter name="status" label="Status" options={WISH_STATUSES} place={place} />
      </Filters>
      <Loading loaded={wishes}>
        {(page) => (
          <>
            <WishTable wishes={page.data} caption="Wishes, newest first" />
            <Pager meta={page.meta} place={place} label="Wishes" />
          </>
        )}
      </Loading>
    </Page>
  )
}
