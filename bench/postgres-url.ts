/** The PostgreSQL the bench's tools run on: BENCH_DATABASE_URL, else TEST_DATABASE_URL; undefined when neither is set. */
export const benchPostgresUrl: string | undefined = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || undefined

/** benchPostgresUrl, for a run that was asked for PostgreSQL: without one it stops with what to set. */
export function requireBenchPostgresUrl(): string {
  if (benchPostgresUrl === undefined) {
    throw new Error('this run needs a PostgreSQL: set BENCH_DATABASE_URL (or TEST_DATABASE_URL), e.g. postgres://postgres@127.0.0.1:5432/test')
  }
  return benchPostgresUrl
}
