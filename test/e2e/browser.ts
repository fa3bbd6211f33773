import assert from 'node:assert/strict'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { build } from 'vite'
import { ROOT } from '../helpers/cli.js'

/**
 * The browser side of the dashboard's end-to-end test (test/e2e/dashboard.test.ts): Debian's Chromium
 * driven by playwright-core, the dashboard's build, and the checks every page gets (axe, phone width).
 */

/** Debian's `chromium` package; CHROMIUM_PATH points elsewhere. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Why the browser test cannot run here, or undefined when it can. */
export function chromiumMissing(): string | undefined {
  if (fs.existsSync(CHROMIUM_PATH)) return undefined
  return `no Chromium at ${CHROMIUM_PATH}: install Debian's (sudo apt-get install chromium) or set CHROMIUM_PATH`
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    // Nothing of the browser's own (updates, sync, safe browsing lists) may reach the network: the test
    // checks that every request goes to the local server.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run'],
  })
}

const DASHBOARD_DIST = path.join(ROOT, 'dashboard', 'dist')
export const DASHBOARD_INDEX = path.join(DASHBOARD_DIST, 'index.html')

/**
 * Builds the dashboard (as `npm run build:dashboard`) when no build is there, so `npm test` works on a
 * fresh clone. Built aside and moved into place with one rename: test files that start together never
 * serve half a build, and the first to finish wins.
 */
export async function ensureDashboardBuilt(): Promise<void> {
  if (fs.existsSync(DASHBOARD_INDEX)) return
  const aside = `${DASHBOARD_DIST}.building-${process.pid}`
  try {
    await build({ configFile: path.join(ROOT, 'dashboard', 'vite.config.ts'), logLevel: 'warn', build: { outDir: aside, emptyOutDir: true } })
    try {
      fs.renameSync(aside, DASHBOARD_DIST)
    } catch (error) {
      if (!['EEXIST', 'ENOTEMPTY'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error
    }
  } finally {
    fs.rmSync(aside, { recursive: true, force: true })
  }
  assert.ok(fs.existsSync(DASHBOARD_INDEX), `the dashboard build did not make ${DASHBOARD_INDEX}`)
}

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

export interface Violation {
  id: string
  impact: string | null
  help: string
  targets: string[]
}

/**
 * axe-core's violations on the page as it is now. Injected through evaluate, which the page's
 * Content-Security-Policy does not govern (a script tag would be refused, as it should be).
 */
export async function axeViolations(page: Page): Promise<Violation[]> {
  if (await page.evaluate('typeof axe') === 'undefined') await page.evaluate(AXE_SOURCE)
  return page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')),
  })))`)
}

/** How many CSS pixels the page is wider than the window (0: no horizontal scrolling). */
export function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')
}

/** Waits until no part of the page is still loading (the app marks loading with role=status). */
export async function settled(page: Page): Promise<void> {
  // A function, not a string: the page's Content-Security-Policy refuses to eval a string predicate.
  await page.waitForFunction(() => {
    const document = (globalThis as any).document
    return document.querySelector('#app main') !== null && document.querySelector('[role=status]') === null
  })
}
