import { type DatabaseIntrospector, type DatabaseMetadata, type DatabaseMetadataOptions, type Kysely, PostgresDialect, type SchemaMetadata, sql, type TableMetadata } from 'kysely'

/**
 * What Kysely's migrator asks of PostgreSQL (does the schema exist, do its tables), answered from the
 * catalog of the connection's own schema only.
 *
 * Kysely's own introspector reads every table of every schema and calls has_schema_privilege() and
 * pg_get_serial_sequence() with schema names; when another schema of the database is dropped during
 * that query (the tests drop theirs all the time; so may another tenant of a shared server), those
 * functions fail with "schema ... does not exist" and the migration fails. Plain catalog reads see
 * one snapshot and resolve no names, so they cannot fail that way.
 */
export class OwnSchemaIntrospector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<unknown>) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace where nspname = current_schema()`.execute(this.db)
    return rows
  }

  /** The tables and views of the current schema, without columns (the migrator needs names only). */
  async getTables(_options?: DatabaseMetadataOptions): Promise<TableMetadata[]> {
    const { rows } = await sql<{ name: string, schema: string, kind: string }>`
      select c.relname as name, ns.nspname as schema, c.relkind as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
      where ns.nspname = current_schema() and c.relkind in ('r', 'v', 'p')
      order by c.relname`.execute(this.db)
    return rows.map((row) => ({ name: row.name, schema: row.schema, isView: row.kind === 'v', columns: [] }))
  }

  async getMetadata(options?: DatabaseMetadataOptions): Promise<DatabaseMetadata> {
    return { tables: await this.getTables(options) }
  }
}

/** PostgresDialect whose introspection stays in the connection's own schema (OwnSchemaIntrospector). */
export class OwnSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new OwnSchemaIntrospector(db)
  }
}
