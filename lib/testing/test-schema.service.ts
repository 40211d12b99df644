import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { JOBS_DATA_SOURCE } from '../jobs-options.interface.js';
import { JOBS_TESTING_SETTINGS, type JobsTestingSettings } from './jobs-testing-options.interface.js';

/** A lock the drop may wait for at most: a session left in a transaction must not hang app.close(). */
const LOCK_TIMEOUT = '10s';

/**
 * Drops the test app's schema when the app closes. The migrations created
 * it at start (JobsModule's normal path). The drop runs on the module's
 * DataSource while it is open, which holds whether the module owns it or
 * shares the app's (Nest shuts a provider down before what it depends on);
 * on a connection of its own made from the same options when it is closed
 * already. A drop that fails is reported as a process warning rather than
 * failing app.close(): the test's result stands, the schema is left behind.
 */
@Injectable()
export class TestSchema implements OnApplicationShutdown {
  constructor(
    @Inject(JOBS_TESTING_SETTINGS) private readonly settings: JobsTestingSettings,
    @Inject(JOBS_DATA_SOURCE) private readonly dataSource: DataSource,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.settings.keepSchema) return;
    try {
      if (this.dataSource.isInitialized) await this.drop(this.dataSource);
      else await this.dropOnOwnConnection();
    } catch (error) {
      process.emitWarning(
        `JobsTestingModule could not drop the test schema "${this.settings.schema}" (${(error as Error).message}). ` +
          `Potential fix: DROP SCHEMA "${this.settings.schema}" CASCADE; a session holding a transaction open on it at close is the usual cause.`,
        'JobsTestingWarning',
      );
    }
  }

  private async drop(dataSource: DataSource): Promise<void> {
    await dataSource.transaction(async (manager) => {
      await manager.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await manager.query(`DROP SCHEMA IF EXISTS "${this.settings.schema}" CASCADE`);
    });
  }

  private async dropOnOwnConnection(): Promise<void> {
    const own = new DataSource({
      ...this.dataSource.options,
      entities: [],
      subscribers: [],
      migrations: [],
      synchronize: false,
      migrationsRun: false,
      dropSchema: false,
      poolSize: 1,
    } as never);
    await own.initialize();
    try {
      await this.drop(own);
    } finally {
      await own.destroy();
    }
  }
}
