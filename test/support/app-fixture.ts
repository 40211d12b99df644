import type { INestApplication } from '@nestjs/common';
import { dropSchemas } from './database.js';

/**
 * The apps a spec file starts and the schemas it makes, closed and dropped
 * for it: push each app into `apps` and each schema into `schemas`. Apps
 * close after each test (`closeApps: 'each'`: a file's tests then never hold
 * more of the server's connections than one test needs) or after the file,
 * the newest first; the schemas are dropped once every app is closed.
 */
export function appFixture(options: { closeApps?: 'each' | 'all' } = {}): {
  apps: INestApplication[];
  schemas: string[];
} {
  const apps: INestApplication[] = [];
  const schemas: string[] = [];
  const closeApps = async () => {
    for (const app of apps.splice(0).reverse()) await app.close().catch(() => undefined);
  };
  if (options.closeApps === 'each') afterEach(closeApps);
  afterAll(async () => {
    await closeApps();
    await dropSchemas(...schemas.splice(0));
  });
  return { apps, schemas };
}
