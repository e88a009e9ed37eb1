import type { Kysely } from 'kysely';

// A GPU lost per telemetry (issue 24 item 3): the last telemetry sample in which all of a RUNNING job's GPUs were
// present, one row per job. The automatic credit of a job failed with `gpu_lost` counts from it; it outlives a
// restart of the control plane (the loss may arrive in a later telemetry batch than the last healthy sample).

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('job_gpu_health')
    .addColumn('job_id', 'text', (c) => c.primaryKey())
    .addColumn('healthy_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('job_gpu_health').execute();
}
