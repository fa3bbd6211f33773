import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestApp, type TestApp } from '../helpers/app.js'
import { storeKinds } from '../helpers/stores.js'

for (const kind of storeKinds()) {
  describe(`smoke (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    test('create then read a wish', async () => {
      const a = await t.account()
      const created = await a.request('POST', '/wishes', { query: 'a kettle' })
      assert.equal(created.status, 201)
      const read = await a.request('GET', `/wishes/${created.body.data.id}`)
      assert.deepEqual(read.body.data, created.body.data)
    })
  })
}
