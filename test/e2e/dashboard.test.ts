import assert from 'node:assert/strict'
import fs from 'node:fs'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { type TestAccount, type TestApp, startTestApp } from '../helpers/app.js'
import { ROOT } from '../helpers/cli.js'
import { createMandate, createWish, DAY_MS, getData, getMandate, inFuture } from '../helpers/fixtures.js'
import { getPayment, pay, refundRaw } from '../helpers/payments.js'
import { type Receiver, startReceiver } from '../helpers/receiver.js'
import { storeKinds } from '../helpers/stores.js'
import { axeViolations, chromiumMissing, ensureDashboardBuilt, horizontalOverflow, launchChromium, settled } from './browser.js'

/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core) against a real listening
 * server and database: sign in, browse, filter, follow links, refund and revoke through the confirmation
 * dialogs (checked through the API afterwards), with axe on every page, a phone-width pass, and no
 * request anywhere but the local server.
 *
 * Without Chromium the suite is skipped with a message, except in CI (`CI` set), where it fails.
 * UPDATE_SCREENSHOTS=1 (`npm run screenshots`) writes the README's screenshots to docs/screenshots/;
 * otherwise they go to a temporary directory, so a test run never changes the checked-in files.
 */

const missing = chromiumMissing()
if (missing && process.env.CI) throw new Error(`the dashboard's browser test must run in CI: ${missing}`)

const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 375, height: 740 }
const kind = storeKinds()[0]!

describe(`dashboard in Chromium (${kind.name})`, { skip: missing ? `${missing} (the browser test is skipped)` : false }, () => {
  let t: TestApp
  let origin: string
  let a: TestAccount
  let receiver: Receiver
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let screenshotDir: string
  const requestedHosts = new Set<string>()
  const browserErrors: string[] = []
  /** The objects made through the API before the browser opens. */
  const data: Record<'kettle' | 'toaster' | 'mandate' | 'spare' | 'bigPayment' | 'smallPayment' | 'endpoint', any> = {} as any

  before(async () => {
    await ensureDashboardBuilt()
    t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' })
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
    a = await t.account()

    receiver = await startReceiver()
    const endpoint = await a.request('POST', '/webhook_endpoints', { url: receiver.url, events: ['*'], description: 'local receiver' })
    assert.equal(endpoint.status, 201, endpoint.raw)
    data.endpoint = endpoint.body.data
    receiver.secret = endpoint.body.data.secret

    data.kettle = await createWish(a, { query: 'A quiet electric kettle', budget: { max: 100 } })
    data.toaster = await createWish(a, { query: 'A four-slice toaster' })
    const cancelled = await a.request('PUT', `/wishes/${data.toaster.id}`, { status: 'cancelled' })
    assert.equal(cancelled.status, 200, cancelled.raw)
    data.mandate = await createMandate(t, a, { wish_id: data.kettle.id, usage: 'multi_use', max_amount: 2000, budget_amount: 5000, expires_at: inFuture(t, DAY_MS) })
    data.spare = await createMandate(t, a, { wish_id: data.kettle.id, max_amount: 3000, expires_at: inFuture(t, DAY_MS) })
    data.bigPayment = await pay(a, { mandate_id: data.mandate.id, amount: 1500 })
    data.smallPayment = await pay(a, { mandate_id: data.mandate.id, amount: 1000 })
    assert.equal((await refundRaw(a, data.smallPayment.id, { amount: 400, reason: 'chipped lid' })).status, 201)
    // Deliver what the changes queued, so the endpoint has deliveries to show.
    while (await t.jobs.runOnce()) { /* a full batch: there may be more */ }

    screenshotDir = process.env.UPDATE_SCREENSHOTS ? path.join(ROOT, 'docs', 'screenshots') : fs.mkdtempSync(path.join(os.tmpdir(), 'wishpay-screenshots-'))
    fs.mkdirSync(screenshotDir, { recursive: true })

    browser = await launchChromium()
    context = await browser.newContext({ viewport: DESKTOP, baseURL: origin, colorScheme: 'light', reducedMotion: 'reduce' })
    page = await context.newPage()
    page.on('request', (request) => { requestedHosts.add(new URL(request.url()).host) })
    page.on('pageerror', (error) => { browserErrors.push(error.message) })
    page.on('console', (message) => { if (/Content[- ]Security[- ]Policy/i.test(message.text())) browserErrors.push(message.text()) })
  })

  after(async () => {
    await browser?.close()
    await receiver?.close()
    await t?.close()
    if (screenshotDir && !process.env.UPDATE_SCREENSHOTS) fs.rmSync(screenshotDir, { recursive: true, force: true })
  })

  /** The page has settled, has this heading, and (unless told) axe finds nothing wrong with it. */
  async function check(heading: string | RegExp, options: { axe?: boolean } = {}): Promise<void> {
    await page.getByRole('heading', { level: 1, name: heading }).waitFor()
    await settled(page)
    if (options.axe === false) return
    const violations = await axeViolations(page)
    assert.deepEqual(violations, [], `axe on "${heading}" (${page.url()})`)
  }

  /**
   * Clicks Filter and waits until the page shows the API's answer to the new query (`path` with `param` =
   * `value`): the page first renders the new address with the old list, and only then starts loading.
   */
  async function filter(heading: string, path: string, param: string, value: string): Promise<void> {
    const answered = page.waitForResponse((response) => {
      const url = new URL(response.url())
      return url.pathname === path && url.searchParams.get(param) === value
    })
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.waitForURL(`**/dashboard${path}?${param}=${value}`)
    await answered
    await check(heading)
  }

  /** The rows of the table with this caption, as their text. */
  async function rowsOf(caption: string): Promise<string[]> {
    return page.getByRole('table', { name: caption }).locator('tbody tr').allInnerTexts()
  }

  async function nav(section: string, heading: string): Promise<void> {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: section }).click()
    await check(heading)
  }

  /** The text of the element that has the focus. */
  function focusedText(): Promise<string> {
    return page.evaluate(() => String((globalThis as any).document.activeElement?.textContent ?? '').trim())
  }

  /** The window, or the whole page when `fullPage` (phone shots, which would otherwise show little). */
  async function screenshot(name: string, options: { fullPage?: boolean } = {}): Promise<void> {
    await page.screenshot({ path: path.join(screenshotDir, `${name}.png`), fullPage: options.fullPage ?? false })
  }

  test('signs in with an API key that it keeps in sessionStorage only, after showing the API\'s refusal of a bad one', async () => {
    await page.goto('/dashboard/')
    await check('Wishpay dashboard')
    await page.getByLabel('API key').fill('sk_not_a_real_key_000000000000000000000')
    await page.getByRole('button', { name: 'Sign in' }).click()
    const refusal = await page.getByRole('alert').innerText()
    assert.match(refusal, /api key/i, 'the API\'s own message')
    await check('Wishpay dashboard')

    await page.getByLabel('API key').fill(a.key)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await check('Wishes')
    assert.equal(new URL(page.url()).pathname, '/dashboard/wishes')

    assert.equal(await page.evaluate('sessionStorage.getItem("wishpay.apiKey")'), a.key)
    assert.equal(await page.evaluate('localStorage.length'), 0)
    assert.equal(await page.evaluate('document.cookie'), '')
    assert.deepEqual(await context.cookies(), [])
    await screenshot('wishes-desktop')
  })

  test('lists and filters wishes, and shows a wish with its mandates and payments', async () => {
    const all = await rowsOf('Wishes, newest first')
    assert.equal(all.length, 2)
    assert.match(all[0]!, /A four-slice toaster/)

    await page.getByLabel('Status').selectOption('cancelled')
    await filter('Wishes', '/wishes', 'status', 'cancelled')
    const cancelled = await rowsOf('Wishes, newest first')
    assert.equal(cancelled.length, 1)
    assert.match(cancelled[0]!, /A four-slice toaster/)

    await page.getByLabel('Status').selectOption('')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.getByRole('link', { name: data.kettle.id }).click()
    await check(`Wish ${data.kettle.id}`)
    assert.match(await page.locator('main').innerText(), /\$100\.00/)
    assert.equal((await rowsOf('Mandates of this wish')).length, 2)
    assert.equal((await rowsOf('Payments for this wish')).length, 2)
  })

  test('shows a mandate\'s budget used as a meter with words, and follows links to its payments and back', async () => {
    await page.getByRole('table', { name: 'Mandates of this wish' }).getByRole('link', { name: data.mandate.id }).click()
    await check(`Mandate ${data.mandate.id}`)
    const meter = page.getByRole('meter', { name: /Budget used/ })
    assert.equal(await meter.getAttribute('value'), '2500')
    assert.equal(await meter.getAttribute('max'), '5000')
    assert.match(await page.locator('main').innerText(), /\$25\.00 of \$50\.00 used \(50%\)/)
    assert.equal((await rowsOf('Payments with this mandate')).length, 2)
    await screenshot('mandate-desktop')

    await page.getByRole('link', { name: 'All payments with this mandate' }).click()
    await check('Payments')
    assert.equal(new URL(page.url()).searchParams.get('mandate_id'), data.mandate.id)
    assert.equal((await rowsOf('Payments, newest first')).length, 2)
    await page.getByRole('link', { name: data.smallPayment.id }).click()
    await check(`Payment ${data.smallPayment.id}`)
    assert.match(await page.getByRole('region', { name: 'Refunds' }).innerText(), /\$4\.00.*chipped lid/)
    await page.getByRole('link', { name: data.kettle.id }).click()
    await check(`Wish ${data.kettle.id}`)
  })

  test('refunds a payment in part and then in full, each after a confirmation', async () => {
    await page.goto(`/dashboard/payments/${data.bigPayment.id}`)
    await check(`Payment ${data.bigPayment.id}`)

    // A partial refund, cancelled once: nothing is sent until it is confirmed.
    await page.getByLabel(/^Amount/).fill('5.00')
    await page.getByLabel(/^Reason/).fill('scratched')
    await page.getByRole('button', { name: 'Refund…' }).click()
    let dialog = page.getByRole('dialog', { name: 'Refund this payment?' })
    await dialog.waitFor()
    await check(`Payment ${data.bigPayment.id}`)
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'hidden' })
    assert.equal((await getPayment(a, data.bigPayment.id)).amount_refunded, 0)

    await page.getByRole('button', { name: 'Refund…' }).click()
    await dialog.getByRole('button', { name: 'Refund $5.00' }).click()
    await dialog.waitFor({ state: 'hidden' })
    await page.getByRole('region', { name: 'Refunds' }).getByText('scratched').waitFor()
    let payment = await getPayment(a, data.bigPayment.id)
    assert.equal(payment.amount_refunded, 500)
    assert.equal(payment.status, 'succeeded')

    // Blank amount: all that remains.
    await page.getByRole('button', { name: 'Refund…' }).click()
    dialog = page.getByRole('dialog', { name: 'Refund this payment?' })
    await dialog.getByRole('button', { name: 'Refund $10.00' }).click()
    await dialog.waitFor({ state: 'hidden' })
    await page.getByRole('main').getByText('refunded', { exact: true }).waitFor()
    payment = await getPayment(a, data.bigPayment.id)
    assert.equal(payment.amount_refunded, 1500)
    assert.equal(payment.status, 'refunded')
    assert.equal(await page.getByRole('button', { name: 'Refund…' }).count(), 0, 'nothing is left to refund')
    await check(`Payment ${data.bigPayment.id}`)
    // Refunds never give budget back.
    assert.equal((await getMandate(a, data.mandate.id)).amount_used, 2500)
  })

  test('revokes a mandate after a confirmation', async () => {
    await page.goto(`/dashboard/mandates/${data.spare.id}`)
    await check(`Mandate ${data.spare.id}`)
    // By keyboard: the dialog takes the focus, and Escape cancels.
    await page.getByRole('button', { name: 'Revoke mandate' }).focus()
    await page.keyboard.press('Enter')
    const dialog = page.getByRole('dialog', { name: 'Revoke this mandate?' })
    await dialog.waitFor()
    assert.equal(await focusedText(), 'Cancel')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
    assert.equal((await getMandate(a, data.spare.id)).status, 'active')

    await page.getByRole('button', { name: 'Revoke mandate' }).click()
    await dialog.getByRole('button', { name: 'Revoke', exact: true }).click()
    await dialog.waitFor({ state: 'hidden' })
    await page.getByRole('main').getByText('revoked', { exact: true }).waitFor()
    assert.equal(await page.getByRole('button', { name: 'Revoke mandate' }).count(), 0)
    const mandate = await getMandate(a, data.spare.id)
    assert.equal(mandate.status, 'revoked')
    assert.notEqual(mandate.revoked_at, null)
    await check(`Mandate ${data.spare.id}`)

    await nav('Mandates', 'Mandates')
    await page.getByLabel('Status').selectOption('revoked')
    await filter('Mandates', '/mandates', 'status', 'revoked')
    const rows = await rowsOf('Mandates, newest first')
    assert.equal(rows.length, 1)
    assert.match(rows[0]!, new RegExp(data.spare.id))
  })

  test('lists and filters events, shows one as JSON, and links to its object', async () => {
    await nav('Events', 'Events')
    assert.ok((await rowsOf('Events, newest first')).length >= 8)
    await page.getByLabel('Type').selectOption('mandate.revoked')
    await filter('Events', '/events', 'type', 'mandate.revoked')
    const rows = await rowsOf('Events, newest first')
    assert.equal(rows.length, 1)
    assert.match(rows[0]!, /mandate\.revoked/)

    await page.getByRole('table', { name: 'Events, newest first' }).getByRole('link', { name: /^evt_/ }).click()
    await check(/^Event evt_/)
    const shown = JSON.parse(await page.locator('pre.json').innerText())
    assert.deepEqual(shown, await getData(a, `/events/${shown.id}`))
    await page.getByRole('link', { name: data.spare.id }).click()
    await check(`Mandate ${data.spare.id}`)
  })

  test('lists webhook endpoints and an endpoint\'s deliveries, linked to their events', async () => {
    await nav('Webhooks', 'Webhook endpoints')
    await page.getByRole('link', { name: receiver.url }).click()
    await check(`Webhook endpoint ${data.endpoint.id}`)
    const rows = await rowsOf('Delivery attempts, newest first')
    assert.ok(receiver.deliveries.length > 0)
    assert.equal(rows.length, Math.min(10, receiver.deliveries.length))
    assert.match(await page.getByRole('navigation', { name: 'Deliveries pages' }).innerText(), new RegExp(`of ${receiver.deliveries.length}`))
    const type = /\b(wish|mandate|payment)\.[a-z]+\b/.exec(rows[0]!)![0]
    await page.getByRole('table', { name: 'Delivery attempts, newest first' }).getByRole('link').first().click()
    await check(/^Event evt_/)
    assert.match(await page.locator('main dl').innerText(), new RegExp(type.replace('.', '\\.')))
  })

  test('fits a 375 px wide phone without sideways scrolling, on every page', async () => {
    await page.setViewportSize(PHONE)
    const pages: Array<[string, string | RegExp]> = [
      ['/dashboard/wishes', 'Wishes'],
      [`/dashboard/wishes/${data.kettle.id}`, `Wish ${data.kettle.id}`],
      ['/dashboard/mandates', 'Mandates'],
      [`/dashboard/mandates/${data.mandate.id}`, `Mandate ${data.mandate.id}`],
      ['/dashboard/payments', 'Payments'],
      [`/dashboard/payments/${data.smallPayment.id}`, `Payment ${data.smallPayment.id}`],
      ['/dashboard/events', 'Events'],
      ['/dashboard/webhooks', 'Webhook endpoints'],
      [`/dashboard/webhooks/${data.endpoint.id}`, `Webhook endpoint ${data.endpoint.id}`],
    ]
    // Every page was checked with axe at desktop width; here the two with the most on them are checked again.
    for (const [url, heading] of pages) {
      await page.goto(url)
      await check(heading, { axe: /^(Mandate|Payment) /.test(String(heading)) })
      assert.equal(await horizontalOverflow(page), 0, `${url} scrolls sideways at ${PHONE.width} px`)
    }
    await page.goto(`/dashboard/events?type=mandate.revoked`)
    await page.getByRole('table', { name: 'Events, newest first' }).getByRole('link').first().click()
    await check(/^Event evt_/, { axe: false })
    assert.equal(await horizontalOverflow(page), 0, 'an event scrolls sideways')

    await page.goto(`/dashboard/mandates/${data.mandate.id}`)
    await check(`Mandate ${data.mandate.id}`, { axe: false })
    await screenshot('mandate-phone', { fullPage: true })
    await page.goto(`/dashboard/payments/${data.smallPayment.id}`)
    await check(`Payment ${data.smallPayment.id}`, { axe: false })
    await screenshot('payment-phone', { fullPage: true })
    await page.setViewportSize(DESKTOP)
  })

  test('skips to the content and moves the focus to each new page\'s heading', async () => {
    await page.goto('/dashboard/wishes')
    await check('Wishes')
    await page.keyboard.press('Tab')
    assert.equal(await focusedText(), 'Skip to content')
    await page.keyboard.press('Enter')
    assert.equal(new URL(page.url()).hash, '#main')
    await page.keyboard.press('Tab')
    assert.ok(await page.getByLabel('Status').evaluate((element) => element === (globalThis as any).document.activeElement), 'the first control of the content')

    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Payments' }).click()
    await check('Payments')
    assert.equal(await focusedText(), 'Payments')
  })

  test('signs out, forgetting the key', async () => {
    await page.goto('/dashboard/wishes')
    await check('Wishes')
    await page.getByRole('button', { name: 'Sign out' }).click()
    await check('Wishpay dashboard')
    assert.equal(await page.evaluate('sessionStorage.length'), 0)
    await page.reload()
    await check('Wishpay dashboard')
  })

  test('asked nothing of any host but the local server, and broke no Content-Security-Policy', () => {
    assert.deepEqual([...requestedHosts], [new URL(origin).host])
    assert.deepEqual(browserErrors, [])
  })
})
