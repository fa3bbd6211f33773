import { useEffect, useState } from 'preact/hooks'

/**
 * A path router for /dashboard/*: the server answers every such path with the app (src/http/dashboard.ts),
 * and links inside the app change the history instead of loading a page.
 */
export const BASE = '/dashboard'

export interface Place {
  /** The path after /dashboard: "/", "/wishes", "/wishes/wish_…". */
  path: string
  query: URLSearchParams
}

function here(): Place {
  return { path: location.pathname.slice(BASE.length) || '/', query: new URLSearchParams(location.search) }
}

export function navigate(href: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', href)
  else history.pushState(null, '', href)
  dispatchEvent(new PopStateEvent('popstate'))
}

export function usePlace(): Place {
  const [place, setPlace] = useState(here)
  useEffect(() => {
    const update = () => setPlace(here())
    addEventListener('popstate', update)
    return () => removeEventListener('popstate', update)
  }, [])
  return place
}

/** A click on a plain left-click link into the dashboard navigates in place; anything else is the browser's. */
export function followLinksInPlace(event: MouseEvent): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
  const link = (event.target as Element).closest('a')
  if (!link || link.target || link.hasAttribute('download') || link.origin !== location.origin) return
  if (link.pathname !== BASE && !link.pathname.startsWith(`${BASE}/`)) return
  // A link to a part of this page (the skip link) is the browser's to follow.
  if (link.hash && link.pathname === location.pathname && link.search === location.search) return
  event.preventDefault()
  navigate(link.pathname + link.search)
}

/** The query with some members changed (undefined or '' removes one), as a dashboard href for `path`. */
export function hrefWith(path: string, query: URLSearchParams, changes: Record<string, string | number | undefined>): string {
  const next = new URLSearchParams(query)
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined || value === '') next.delete(name)
    else next.set(name, String(value))
  }
  const qs = next.toString()
  return `${BASE}${path}${qs ? `?${qs}` : ''}`
}
