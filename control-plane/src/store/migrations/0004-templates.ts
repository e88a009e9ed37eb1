import type { Kysely } from 'kysely';

// The template catalog: templates, their built runtimes per backend, and qualifications binding them to machines.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('templates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('min_vram_bytes', 'bigint', (c) => c.notNull())
    .addColumn('recommended_vram_bytes', 'bigint')
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('template_runtimes')
    .addColumn('template_id', 'text', (c) => c.notNull().references('templates.id').onDelete('cascade'))
    .addColumn('backend', 'text', (c) => c.notNull())
    .addColumn('image_digest', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('template_runtimes_pk', ['template_id', 'backend'])
    .execute();
  await db.schema.createIndex('template_runtimes_backend').on('template_runtimes').columns(['backend', 'template_id']).execute();

  // machine_id has no foreign key: machines live in their own migration and may be removed independently.
  await db.schema
    .createTable('template_qualifications')
    .addColumn('template_id', 'text', (c) => c.notNull().references('templates.id').onDelete('cascade'))
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('qualified_at', 'text', (c) => c.notNull())
    .addColumn('detail', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('template_qualifications_pk', ['template_id', 'machine_id', 'source'])
    .execute();
  await db.schema
    .createIndex('template_qualifications_machine')
    .on('template_qualifications')
    .columns(['machine_id', 'template_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('template_qualifications').execute();
  await db.schema.dropTable('template_runtimes').execute();
  await db.schema.dropTable('templates').execute();
}
