import type { Kysely } from 'kysely';

// Hosting: host profiles, pairings (and wrong-code misses), enrollment tokens, machines, versioned offers,
// telemetry buckets. Timestamps are ISO-8601 UTC text; booleans 0/1; secrets only as sha256 hex.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('host_profiles')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id'))
    .addColumn('hosting_enabled', 'integer', (c) => c.notNull())
    .addColumn('hosting_blocked', 'integer', (c) => c.notNull())
    .addColumn('hosting_started_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('pairings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('poll_secret_hash', 'text', (c) => c.notNull())
    .addColumn('user_code', 'text', (c) => c.notNull().unique())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('manifest', 'text')
    .addColumn('source_address', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('go_live', 'integer', (c) => c.notNull())
    .addColumn('approver_account_id', 'text', (c) => c.references('accounts.id'))
    .addColumn('approver_credential_kind', 'text')
    .addColumn('approver_credential_id', 'text')
    .addColumn('approved_at', 'text')
    .addColumn('consumed_at', 'text')
    .addColumn('enrollment_token_id', 'text')
    .execute();
  await db.schema.createIndex('pairings_expires_at').on('pairings').column('expires_at').execute();
  await db.schema.createIndex('pairings_approver').on('pairings').columns(['approver_account_id', 'state']).execute();

  await db.schema
    .createTable('pairing_misses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('pairing_misses_subject_at').on('pairing_misses').columns(['subject', 'at']).execute();
  await db.schema.createIndex('pairing_misses_at').on('pairing_misses').column('at').execute();

  await db.schema
    .createTable('enrollment_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('pairing_id', 'text', (c) => c.references('pairings.id'))
    .addColumn('go_live', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('consumed_at', 'text')
    .addColumn('machine_id', 'text')
    .execute();
  await db.schema.createIndex('enrollment_tokens_account_created').on('enrollment_tokens').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('machines')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('manifest', 'text', (c) => c.notNull())
    .addColumn('manifest_hash', 'text', (c) => c.notNull())
    .addColumn('hostname', 'text', (c) => c.notNull())
    .addColumn('gpu_count', 'integer', (c) => c.notNull())
    .addColumn('gpu_model', 'text')
    .addColumn('vram_bytes', 'bigint')
    .addColumn('ram_bytes', 'bigint', (c) => c.notNull())
    .addColumn('disk_bytes', 'bigint', (c) => c.notNull())
    .addColumn('region', 'text')
    .addColumn('go_live', 'integer', (c) => c.notNull())
    .addColumn('live_state', 'text', (c) => c.notNull())
    .addColumn('live_error', 'text')
    .addColumn('last_heartbeat_at', 'text')
    .addColumn('healthy', 'integer')
    .addColumn('problems', 'text', (c) => c.notNull())
    .addColumn('uptime_s', 'bigint')
    .addColumn('net_download_mbps', 'double precision')
    .addColumn('net_upload_mbps', 'double precision')
    .addColumn('net_latency_ms', 'double precision')
    .addColumn('net_measured_at', 'text')
    .addColumn('net_error', 'text')
    .addColumn('enrollment_token_id', 'text', (c) => c.notNull().unique().references('enrollment_tokens.id'))
    .addColumn('pairing_id', 'text', (c) => c.references('pairings.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('machines_owner_created').on('machines').columns(['owner_account_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('machines_pairing').on('machines').column('pairing_id').execute();

  await db.schema
    .createTable('offers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('machine_id', 'text', (c) => c.notNull().unique().references('machines.id'))
    .addColumn('current_version', 'bigint', (c) => c.notNull())
    .addColumn('listed', 'integer', (c) => c.notNull())
    .addColumn('seeded', 'integer', (c) => c.notNull())
    .addColumn('measured_bandwidth_mbps', 'bigint')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('offer_versions')
    .addColumn('offer_id', 'text', (c) => c.notNull().references('offers.id'))
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('rate_micro_per_hour', 'bigint', (c) => c.notNull())
    .addColumn('included_disk_gib', 'bigint', (c) => c.notNull())
    .addColumn('included_egress_gib', 'bigint', (c) => c.notNull())
    .addColumn('available_from', 'text', (c) => c.notNull())
    .addColumn('available_until', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('created_by_account_id', 'text')
    .addPrimaryKeyConstraint('offer_versions_pk', ['offer_id', 'version'])
    .execute();

  await db.schema
    .createTable('offer_maintenance_windows')
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('starts_at', 'text', (c) => c.notNull())
    .addColumn('ends_at', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('offer_maintenance_windows_pk', ['offer_id', 'version', 'position'])
    .addForeignKeyConstraint('offer_maintenance_windows_version', ['offer_id', 'version'], 'offer_versions', ['offer_id', 'version'])
    .execute();

  await db.schema
    .createTable('telemetry_buckets')
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('bucket_start', 'text', (c) => c.notNull())
    .addColumn('samples', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('telemetry_buckets_pk', ['machine_id', 'bucket_start'])
    .execute();
  await db.schema.createIndex('telemetry_buckets_start').on('telemetry_buckets').column('bucket_start').execute();

  await db.schema
    .createTable('telemetry_stats')
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('bucket_start', 'text', (c) => c.notNull())
    .addColumn('device', 'text', (c) => c.notNull())
    .addColumn('field', 'text', (c) => c.notNull())
    .addColumn('min', 'double precision', (c) => c.notNull())
    .addColumn('max', 'double precision', (c) => c.notNull())
    .addColumn('sum', 'double precision', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('telemetry_stats_pk', ['machine_id', 'bucket_start', 'device', 'field'])
    .execute();
  await db.schema.createIndex('telemetry_stats_start').on('telemetry_stats').column('bucket_start').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'telemetry_stats',
    'telemetry_buckets',
    'offer_maintenance_windows',
    'offer_versions',
    'offers',
    'machines',
    'enrollment_tokens',
    'pairing_misses',
    'pairings',
    'host_profiles',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
