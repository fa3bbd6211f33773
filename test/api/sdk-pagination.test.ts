import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ListRequest, type PageLike } from '../../packages/sdk/src/index.js'

/**
 * How `for await` over a list picks each next page, on pages served from an array: with cursors
 * (`meta.has_more`), and the offset paging of servers without them. sdk.test.ts walks a real server.
 */

const ITEMS = Array.from({ length: 5 }, (_, i) => ({ id: `obj_${5 - i}` })) // newest first

type Query = Record<string, unknown>

/** A list endpoint over ITEMS that records each query; `cursors: false` answers as before cursors existed. */
function endpoint(cursors: boolean) {
  const queries: Query[] = []
  const fetchPage = async (query: Query): Promise<PageLike<{ id: string }>> => {
    queries.push(query)
    const limit = Number(query.limit ?? 10)
    let start = Number(query.offset ?? 0)
    let end = start + limit
    if (typeof query.starting_after === 'string') {
      start = ITEMS.findIndex((x) => x.id === query.starting_after) + 1
      end = start + limit
    }
    if (typeof query.ending_before === 'string') {
      end = ITEMS.findIndex((x) => x.id === query.ending_before)
      start = Math.max(0, end - limit)
    }
    const data = ITEMS.slice(start, end)
    const hasMore = typeof query.ending_before === 'string' ? start > 0 : end < ITEMS.length
    const meta = { total: ITEMS.length, limit, offset: cursors && query.offset === undefined ? 0 : start }
    return { data, meta: cursors ? { ...meta, has_more: hasMore } : meta }
  }
  return { queries, fetchPage }
}

async function walk(list: ListRequest<PageLike<{ id: string }>>): Promise<string[]> {
  const ids: string[] = []
  for await (const item of list) ids.push(item.id)
  return ids
}

describe('SDK pagination', () => {
  test('with cursors, each page starts after the last item seen, and any offset is dropped', async () => {
    const e = endpoint(true)
    assert.deepEqual(await walk(new ListRequest(e.fetchPage, { limit: 2, status: 'active' })), ITEMS.map((x) => x.id))
    assert.deepEqual(e.queries, [
      { limit: 2, status: 'active' },
      { limit: 2, status: 'active', starting_after: 'obj_4' },
      { limit: 2, status: 'active', starting_after: 'obj_2' },
    ])
    const fromOffset = endpoint(true)
    assert.deepEqual(await walk(new ListRequest(fromOffset.fetchPage, { limit: 2, offset: 1 })), ['obj_4', 'obj_3', 'obj_2', 'obj_1'])
    assert.deepEqual(fromOffset.queries, [{ limit: 2, offset: 1 }, { limit: 2, starting_after: 'obj_3' }])
  })

  test('a walk that starts with ending_before goes towards newer items', async () => {
    const e = endpoint(true)
    assert.deepEqual(await walk(new ListRequest(e.fetchPage, { limit: 2, ending_before: 'obj_1' })), ['obj_3', 'obj_2', 'obj_5', 'obj_4'])
    assert.deepEqual(e.queries.map((q) => q.ending_before), ['obj_1', 'obj_3'])
  })

  test('without cursors, offset moves on until meta.total', async () => {
    const e = endpoint(false)
    assert.deepEqual(await walk(new ListRequest(e.fetchPage, { limit: 2 })), ITEMS.map((x) => x.id))
    assert.deepEqual(e.queries.map((q) => q.offset), [undefined, 2, 4])
  })

  test('awaiting gives the first page, fetched once however often it is awaited', async () => {
    const e = endpoint(true)
    const list = new ListRequest(e.fetchPage, { limit: 2 })
    assert.deepEqual((await list).data.map((x) => x.id), ['obj_5', 'obj_4'])
    await list
    assert.equal(e.queries.length, 1)
  })
})
