import type pg from 'pg';
import type { DataSource } from 'typeorm';

/**
 * The `pg` pool under a TypeORM DataSource. TypeORM's postgres driver keeps
 * it as `driver.master` without typing it; this is the one place that reaches
 * in, so a change of TypeORM's internals is mended here.
 */
export function pgPoolOf(dataSource: DataSource): pg.Pool {
  const pool = (dataSource.driver as unknown as { master?: pg.Pool }).master;
  if (!pool) {
    throw new Error('nestjs-durable-jobs: the DataSource has no pg pool (is it a postgres DataSource, initialized?)');
  }
  return pool;
}
