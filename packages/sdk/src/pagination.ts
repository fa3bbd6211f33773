/** What a list answer looks like: `meta` has `total`/`offset`, or `has_more` once cursors exist. */
export interface PageLike<Item> {
  data: Item[]
  meta: { total?: number, limit?: number, offset?: number, has_more?: boolean }
}

type Query = Record<string, unknown>

/**
 * The next page's query, or undefined after the last page. With `meta.has_more` (cursor paging) it
 * asks for the items after the last one seen (`starting_after`), or, for a walk that started with
 * `ending_before`, those before the first one seen; without it, it moves `offset` on until
 * `meta.total` is reached. Offset paging can repeat or skip items created while iterating; cursors
 * cannot.
 */
function nextQuery(query: Query, page: PageLike<{ id: string }>): Query | undefined {
  const first = page.data[0]
  const last = page.data.at(-1)
  if (first === undefined || last === undefined) return undefined
  const { meta } = page
  if (typeof meta.has_more === 'boolean') {
    if (!meta.has_more) return undefined
    const { offset: _offset, starting_after: _after, ending_before: before, ...rest } = query
    // Started with ending_before: the walk goes towards newer objects, a page at a time.
    return before === undefined ? { ...rest, starting_after: last.id } : { ...rest, ending_before: first.id }
  }
  const offset = (meta.offset ?? 0) + page.data.length
  return meta.total !== undefined && offset < meta.total ? { ...query, offset } : undefined
}

/**
 * What `list()` returns: awaited, the first page (`{ data, meta }`); iterated with `for await`,
 * every item of every page, fetched one page at a time.
 */
export class ListRequest<Page extends PageLike<{ id: string }>> implements Promise<Page>, AsyncIterable<Page['data'][number]> {
  readonly [Symbol.toStringTag] = 'ListRequest'
  private first: Promise<Page> | undefined

  constructor(private readonly fetchPage: (query: Query) => Promise<Page>, private readonly query: Query) {}

  private firstPage(): Promise<Page> {
    return (this.first ??= this.fetchPage(this.query))
  }

  then<A = Page, B = never>(onFulfilled?: ((page: Page) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    return this.firstPage().then(onFulfilled, onRejected)
  }

  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<Page | B> {
    return this.firstPage().catch(onRejected)
  }

  finally(onFinally?: (() => void) | null): Promise<Page> {
    return this.firstPage().finally(onFinally)
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Page['data'][number]> {
    let query: Query | undefined = this.query
    let page = await this.firstPage()
    for (;;) {
      yield* page.data
      query = nextQuery(query, page)
      if (query === undefined) return
      page = await this.fetchPage(query)
    }
  }
}
