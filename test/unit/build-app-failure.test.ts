import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { createMetrics } from '../../src/http/metrics.js'
import { systemClock } from '../../src/lib/clock.js'
import { createServices, type Services } from '../../src/services.js'
import { openStore } from '../helpers/stores.js'

/**
 * An app that fails to build is closed by buildApp before it throws, so what it had started stops: the
 * caller never gets the app to close. Metrics listen to the store's commits (http/metrics.ts), and a
 * listener left behind would outlive every app built on a long-lived store (an embedder's, a test's).
 */
test('buildApp that throws after registering its metrics has closed them', async () => {
  const store = await openStore('sqlite')
  try {
    const config = loadConfig({})
    const metrics = createMetrics({ db: store.db, clock: systemClock })
    let closed = 0
    const closeMetrics = metrics.close
    metrics.close = () => {
      closed++
      closeMetrics()
    }
    // A route plugin registered after the metrics fails: its service cannot be read.
    const services = createServices({ config, db: store.db, clock: systemClock })
    const broken = Object.create(services, { receipts: { get() { throw new Error('receipts are broken') } } }) as Services

    await assert.rejects(buildApp({ config, db: store.db, services: broken, metrics }), /receipts are broken/)
    assert.equal(closed, 1, 'the app closed its metrics before buildApp threw')
  } finally {
    await store.close()
  }
})
