import { Type, type Static } from '@sinclair/typebox'
import { IdParams, ListMeta, Nullable, PageQuery, StringEnum, Timestamp } from '../../http/schemas.js'
import { EVENT_TYPES } from './types.js'

export const EventTypeSchema = StringEnum(EVENT_TYPES, { description: 'What happened: <object>.<change>' })

export const EventSchema = Type.Object({
  id: Type.String({ examples: ['evt_01jf3v7k8m2n4p6q8r0s2t4v6w'] }),
  type: EventTypeSchema,
  created_at: Timestamp,
  data: Type.Object({
    object: Type.Object({}, { additionalProperties: true, description: 'The wish, mandate or payment as the API returned it right after the change' }),
  }),
  request_id: Nullable(Type.String({ description: 'The request that caused it; null for background work (settlement, expiry)' })),
}, {
  $id: 'Event',
  title: 'Event',
  description: 'Also the body of every webhook delivery.',
  examples: [{
    id: 'evt_01jf3v7k8m2n4p6q8r0s2t4v6w',
    type: 'payment.succeeded',
    created_at: '2026-11-22T10:00:00.000Z',
    data: { object: { id: 'pay_01jf3v7k8m2n4p6q8r0s2t4v6w', status: 'succeeded', amount: 4999, currency: 'USD' } },
    request_id: 'req_01jf3v7k8m2n4p6q8r0s2t4v6w',
  }],
})
export type Event = Static<typeof EventSchema>
export const EventRef = Type.Ref(EventSchema.$id!)

export const ListEventsQuery = Type.Object({
  ...PageQuery,
  type: Type.Optional(EventTypeSchema),
}, { additionalProperties: false })
export type ListEventsInput = Static<typeof ListEventsQuery>

export const EventParams = IdParams
export const EventList = Type.Object({ data: Type.Array(EventRef), meta: ListMeta }, { description: 'A page of events' })
