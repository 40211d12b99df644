import type { DataSource } from 'typeorm';
import { notificationChannel } from './notifications/notification-topics.js';

/** What every storage of one module works on: the connection, the schema, and the schema's NOTIFY channel. */
export class StorageContext {
  readonly channel: string;

  constructor(
    readonly dataSource: DataSource,
    readonly schema: string,
  ) {
    this.channel = notificationChannel(schema);
  }
}
