import { useEffect, useRef, useState } from 'preact/hooks'
import { session } from './api'
import { Layout } from './components/Layout'
import { Page } from './components/Page'
import { Event } from './pages/Event'
import { Events } from './pages/Events'
import { Mandate } from './pages/Mandate'
import { Mandates } from './pages/Mandates'
import { Payment } from './pages/Payment'
import { Payments } from './pages/Payments'
import { SignIn } from './pages/SignIn'
import { WebhookEndpoint } from './pages/WebhookEndpoint'
import { Webhooks } from './pages/Webhooks'
import { Wish } from './pages/Wish'
import { Wishes } from './pages/Wishes'
import { BASE, navigate, type Place, usePlace } from './router'

/** The page for a path, or null when there is none. */
function route(place: Place) {
  const [, section, id] = place.path.split('/')
  switch (section) {
    case 'wishes': return id ? <Wish id={id} /> : <Wishes place={place} />
    case 'mandates': return id ? <Mandate id={id} /> : <Mandates place={place} />
    case 'payments': return id ? <Payment id={id} /> : <Payments place={place} />
    case 'events': return id ? <Event id={id} /> : <Events place={place} />
    case 'webhooks': return id ? <WebhookEndpoint id={id} place={place} /> : <Webhooks place={place} />
    default: return null
  }
}

export function App() {
  const place = usePlace()
  const [signedIn, setSignedIn] = useState(() => session.key() !== null)
  const first = useRef(true)

  useEffect(() => {
    if (place.path === '/') navigate(`${BASE}/wishes`, { replace: true })
  }, [place.path])
  // After a navigation (not the first page), the new page's heading takes the focus, so a screen
  // reader announces it and Tab continues from there.
  useEffect(() => {
    if (first.current) { first.current = false; return }
    document.querySelector<HTMLElement>('main h1')?.focus()
  }, [place.path, place.query.toString()])

  if (!signedIn) return <SignIn onSignedIn={(key) => { session.signIn(key); setSignedIn(true) }} />
  const signOut = () => { session.signOut(); setSignedIn(false) }
  return (
    <Layout path={place.path} onSignOut={signOut}>
      {route(place) ?? <Page title="Not found"><p>There is no page here. <a href={`${BASE}/wishes`}>Go to wishes</a>.</p></Page>}
    </Layout>
  )
}
