import type { ComponentChildren } from 'preact'
import { BASE } from '../router'

const SECTIONS = [
  ['wishes', 'Wishes'],
  ['mandates', 'Mandates'],
  ['payments', 'Payments'],
  ['events', 'Events'],
  ['webhooks', 'Webhooks'],
] as const

/** The frame of every signed-in page: skip link, banner with navigation, the page as main. */
export function Layout({ path, onSignOut, children }: { path: string, onSignOut: () => void, children: ComponentChildren }) {
  const section = path.split('/')[1]
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="banner">
        <a class="brand" href={`${BASE}/wishes`}>Wishpay</a>
        <nav aria-label="Sections">
          <ul>
            {SECTIONS.map(([slug, label]) => (
              <li key={slug}>
                <a href={`${BASE}/${slug}`} aria-current={section === slug ? 'page' : undefined}>{label}</a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="secondary" onClick={onSignOut}>Sign out</button>
      </header>
      <main id="main" tabIndex={-1}>{children}</main>
    </>
  )
}
