import type { Kysely } from 'kysely';

// CPU machines (issue 25, item 7): a machine that reports no GPU is offered only when its host lists it as a CPU
// machine (POST /api/v1/hosts/machines/{id}/cpu-listing); offer search then shows it as one (no gpu_count, no model).
// 0 for every machine enrolled before: a GPU-less one leaves the search until its host lists it.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('machines')
    .addColumn('cpu_listed', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('machines').dropColumn('cpu_listed').execute();
}
