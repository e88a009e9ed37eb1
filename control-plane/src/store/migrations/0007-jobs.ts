import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Renting: quotes, jobs, job events and budget amendments.

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  await db.schema
    .createTable('quotes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('offer_version', 'bigint', (c) => c.notNull())
    .addColumn('gpu_count', 'bigint', (c) => c.notNull())
    .addColumn('machine_rate_micro_per_hour', 'bigint', (c) => c.notNull())
    .addColumn('platform_fee_bps', 'bigint', (c) => c.notNull())
    .addColumn('budget_micro', 'bigint', (c) => c.notNull())
    .addColumn('duration_limit_s', 'bigint', (c) => c.notNull())
    .addColumn('estimated_total_micro', 'bigint', (c) => c.notNull())
    .addColumn('manifest_hash', 'text', (c) => c.notNull())
    .addColumn('image_digest', 'text', (c) => c.notNull())
    .addColumn('template_id', 'text')
    .addColumn('terms_version', 'text', (c) => c.notNull())
    .addColumn('included_disk_gib', 'bigint', (c) => c.notNull())
    .addColumn('included_egress_gib', 'bigint', (c) => c.notNull())
    .addColumn('host_ceiling_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('job_id', 'text')
    .addCheckConstraint('quotes_budget_positive', sql`budget_micro > 0`)
    .execute();
  await db.schema.createIndex('quotes_expires').on('quotes').columns(['used_at', 'expires_at']).execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('host_account_id', 'text', (c) => c.notNull())
    .addColumn('quote_id', 'text', (c) => c.notNull().unique())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('fence', 'bigint', (c) => c.notNull())
    .addColumn('job_version', 'bigint', (c) => c.notNull())
    .addColumn('budget_version', 'bigint', (c) => c.notNull())
    .addColumn('machine_rate_micro_per_hour', 'bigint', (c) => c.notNull())
    .addColumn('platform_fee_bps', 'bigint', (c) => c.notNull())
    .addColumn('funded_budget_micro', 'bigint', (c) => c.notNull())
    .addColumn('duration_limit_s', 'bigint', (c) => c.notNull())
    .addColumn('host_ceiling_at', 'text', (c) => c.notNull())
    .addColumn('funded_through', 'text')
    .addColumn('gpu_count', 'bigint', (c) => c.notNull())
    .addColumn('gpu_model', 'text')
    .addColumn('gpu_pci_addresses', 'text', (c) => c.notNull())
    .addColumn('image_digest', 'text', (c) => c.notNull())
    .addColumn('template_id', 'text')
    .addColumn('template_name', 'text')
    .addColumn('template_kind', 'text')
    .addColumn('launch_sealed', 'text', (c) => c.notNull())
    .addColumn('env_sealed', 'text', (c) => c.notNull())
    .addColumn('engine_key_sealed', 'text')
    .addColumn('accepted_runtime_ms', 'bigint', (c) => c.notNull())
    .addColumn('cumulative_charge_micro', 'bigint', (c) => c.notNull())
    .addColumn('charged_host_micro', 'bigint', (c) => c.notNull())
    .addColumn('charged_fee_micro', 'bigint', (c) => c.notNull())
    .addColumn('meter_started_at', 'text')
    .addColumn('meter_floor_at', 'text')
    .addColumn('last_meter_receipt_at', 'text')
    .addColumn('meter_seq', 'bigint', (c) => c.notNull())
    .addColumn('metered_until', 'text')
    .addColumn('access', 'text')
    .addColumn('pull_progress_pct', 'bigint')
    .addColumn('stop_requested_at', 'text')
    .addColumn('stop_reason', 'text')
    .addColumn('close_reason', 'text')
    .addColumn('stopped_at', 'text')
    .addColumn('retrieval_until', 'text')
    .addColumn('closed_at', 'text')
    .addColumn('state_changed_at', 'text', (c) => c.notNull())
    .addColumn('event_seq', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    // Defence in depth: the domain never charges past the funded budget, and host + fee is the charge.
    .addCheckConstraint('jobs_charge_within_budget', sql`cumulative_charge_micro <= funded_budget_micro`)
    .addCheckConstraint('jobs_charge_split', sql`charged_host_micro + charged_fee_micro = cumulative_charge_micro`)
    .execute();
  await db.schema.createIndex('jobs_account').on('jobs').columns(['account_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('jobs_machine_state').on('jobs').columns(['machine_id', 'state']).execute();
  await db.schema.createIndex('jobs_state_funded').on('jobs').columns(['state', 'funded_through']).execute();
  await db.schema.createIndex('jobs_state_changed').on('jobs').columns(['state', 'state_changed_at']).execute();

  await db.schema
    .createTable('job_events')
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('job_events_pk', ['job_id', 'seq'])
    .execute();

  await db.schema
    .createTable('job_budget_amendments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('budget_version', 'bigint', (c) => c.notNull())
    .addColumn('additional_budget_micro', 'bigint', (c) => c.notNull())
    .addColumn('funded_budget_micro', 'bigint', (c) => c.notNull())
    .addColumn('previous_duration_limit_s', 'bigint', (c) => c.notNull())
    .addColumn('new_duration_limit_s', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('job_budget_amendments_version', ['job_id', 'budget_version'])
    .execute();

  // Amendments are immutable evidence: refuse UPDATE and DELETE in the database itself.
  if (postgres) {
    await sql`create function job_budget_amendments_immutable() returns trigger language plpgsql as $$
      begin raise exception 'budget amendments are immutable'; end $$`.execute(db);
    await sql`create trigger job_budget_amendments_no_update before update or delete on job_budget_amendments
      for each row execute function job_budget_amendments_immutable()`.execute(db);
  } else {
    await sql`create trigger job_budget_amendments_no_update before update on job_budget_amendments
      begin select raise(abort, 'budget amendments are immutable'); end`.execute(db);
    await sql`create trigger job_budget_amendments_no_delete before delete on job_budget_amendments
      begin select raise(abort, 'budget amendments are immutable'); end`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema.dropTable('job_budget_amendments').execute();
  await db.schema.dropTable('job_events').execute();
  await db.schema.dropTable('jobs').execute();
  await db.schema.dropTable('quotes').execute();
  if (postgres) await sql`drop function if exists job_budget_amendments_immutable()`.execute(db);
}
