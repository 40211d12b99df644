import type pg from 'pg';
import type { DataSource } from 'typeorm';
import { JobsError } from '../../model/index.js';

/**
 * The `pg` pool under a TypeORM DataSource. TypeORM's postgres driver keeps
 * it as `driver.master` without typing it; this is the one place that reaches
 * in, so a change of TypeORM's internals is mended here.
 */
export function pgPoolOf(dataSource: DataSource): pg.Pool {
  const pool = (dataSource.driver as unknown as { master?: pg.Pool }).master;
  if (!pool) {
    throw new JobsError(
      `nestjs-durable-jobs: the DataSource (type "${String(dataSource.options.type)}", ` +
        `${dataSource.isInitialized ? 'initialized' : 'not initialized'}) has no pg pool. ` +
        'Potential fix: pass an initialized DataSource of type "postgres" on the pg driver, or a "connection".',
    );
  }
  return pool;
}
