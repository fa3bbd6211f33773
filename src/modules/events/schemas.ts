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

export const EventStreamQuery = Type.Object({
  starting_after: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'Resume after this event id, for clients that cannot send Last-Event-ID (the header wins when both are sent)',
    examples: ['evt_01jf3v7k8m2n4p6q8r0s2t4v6w'],
  })),
  types: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 1000,
    description: 'Only these event types, separated by commas; all when absent',
    examples: ['payment.succeeded,payment.failed'],
  })),
}, { additionalProperties: false })
export type EventStreamInput = Static<typeof EventStreamQuery>

export const EventStreamResponse = {
  description: 'A stream of server-sent events that stays open; one message per event',
  content: {
    'text/event-stream': {
      schema: Type.String({
        description: 'Messages of `id:`, `event:` and `data:` lines (the Event as JSON), each ended by a blank line; `: ping` comments in between',
        examples: ['retry: 3000\nid: evt_01jf3v7k8mzzzzzzzzzzzzzzzz\n\n'
          + 'id: evt_01jf3v7k8m2n4p6q8r0s2t4v6w\nevent: payment.succeeded\n'
          + 'data: {"id":"evt_01jf3v7k8m2n4p6q8r0s2t4v6w","type":"payment.succeeded","created_at":"2026-11-22T10:00:00.000Z",'
          + '"data":{"object":{"id":"pay_01jf3v7k8m2n4p6q8r0s2t4v6w","status":"succeeded"}},"request_id":"req_01jf3v7k8m2n4p6q8r0s2t4v6w"}\n\n'],
      }),
    },
  },
}
