import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Kysely } from 'kysely'
import { SharedCommits } from '../../src/db/shared-commits.js'
import { openStore } from '../helpers/stores.js'

/** The store's report of each shared commit (db/shared-commits.ts), which /metrics listens to. */
describe('shared commits', () => {
  test('each listener hears each report until it stops listening', () => {
    const commits = new SharedCommits()
    const heard: Array<[string, number, number]> = []
    const stopA = commits.listen((writes, seconds) => heard.push(['a', writes, seconds]))
    commits.listen((writes, seconds) => heard.push(['b', writes, seconds]))
    commits.report(3, 0.002)
    stopA()
    commits.report(1, 0.001)
    assert.deepEqual(heard, [['a', 3, 0.002], ['b', 3, 0.002], ['b', 1, 0.001]])
  })

  test('a listener that throws costs its own observation only: the others hear it, report returns', () => {
    const commits = new SharedCommits()
    const heard: number[] = []
    commits.listen(() => { throw new Error('a broken listener') })
    commits.listen((writes) => heard.push(writes))
    assert.doesNotThrow(() => commits.report(2, 0.001))
    assert.deepEqual(heard, [2])
  })

  test('SQLite: a throwing listener neither fails the COMMIT nor keeps its writers waiting', async () => {
    const store = await openStore('sqlite')
    try {
      const kysely = store.db.kysely as unknown as Kysely<any>
      await kysely.schema.createTable('items').addColumn('id', 'text', (c) => c.primaryKey()).execute()
      const heard: number[] = []
      store.db.sharedCommits.listen(() => { throw new Error('a broken listener') })
      store.db.sharedCommits.listen((writes) => heard.push(writes))
      await Promise.all(['a', 'b', 'c'].map((id) => kysely.insertInto('items').values({ id }).execute()))
      const rows = await kysely.selectFrom('items').select('id').orderBy('id').execute()
      assert.deepEqual(rows.map((r) => r.id), ['a', 'b', 'c'])
      assert.equal(heard.reduce((sum, n) => sum + n, 0), 3, 'every committed write heard once')
    } finally {
      await store.close()
    }
  })
})
