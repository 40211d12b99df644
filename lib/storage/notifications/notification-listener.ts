import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { pgPoolOf } from '../connection/pg-driver.js';
import { quoteIdent } from '../connection/sql-identifiers.js';
import { JobNotifications, type NotificationSubscriber } from './job-notifications.interface.js';
import { decodeNotification } from './notification-topics.js';

interface PgNotification {
  channel: string;
  payload?: string;
}
interface PgListenClient {
  query(text: string): Promise<unknown>;
  on(event: 'notification', cb: (msg: PgNotification) => void): void;
  on(event: 'error', cb: (err: Error) => void): void;
  removeAllListeners(): void;
  release(err?: Error | boolean): void;
}

/**
 * One pooled connection per instance that LISTENs on the schema's channel.
 * The connection is re-made after errors; polling covers the gap, and
 * subscribers hear of the reconnect so they can look for what they missed.
 */
export class NotificationListener extends JobNotifications {
  private readonly logger = new Logger('JobNotifications');
  private client: PgListenClient | null = null;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private readonly subscribers = new Set<NotificationSubscriber>();
  /** The worker and the scheduler share one connection: it closes when the last of them stops. */
  private users = 0;
  private starting: Promise<void> | null = null;
  /** Set when a connection failed or was lost: what was sent meanwhile never arrived. */
  private gap = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly channel: string,
  ) {
    super();
  }

  subscribe(subscriber: NotificationSubscriber): () => void {
    this.subscribers.add(subscriber);
    return () => this.subscribers.delete(subscriber);
  }

  async start(): Promise<void> {
    this.users++;
    if (this.users > 1) return this.starting ?? undefined;
    this.stopped = false;
    this.gap = false;
    this.starting = this.connect();
    await this.starting;
  }

  private async connect(): Promise<void> {
    try {
      const client = (await pgPoolOf(this.dataSource).connect()) as unknown as PgListenClient;
      client.on('notification', (msg) => {
        if (msg.channel !== this.channel || msg.payload === undefined) return;
        const event = decodeNotification(msg.payload);
        if (!event) return;
        for (const s of this.subscribers) s.onNotification?.(event);
      });
      client.on('error', (err) => this.lost(client, err));
      await client.query(`LISTEN ${quoteIdent(this.channel)}`);
      this.client = client;
      // Anything sent while we were away is lost: let subscribers look for themselves.
      if (this.gap) for (const s of this.subscribers) s.onReconnect?.();
      this.gap = false;
    } catch (error) {
      this.gap = true;
      this.logger.warn(`LISTEN failed (${(error as Error).message}); retrying in 1 s, polling meanwhile`);
      this.scheduleReconnect();
    }
  }

  private lost(client: PgListenClient, err: Error): void {
    if (this.client !== client) return;
    this.client = null;
    this.gap = true;
    client.removeAllListeners();
    client.release(err);
    if (!this.stopped) {
      this.logger.warn(`LISTEN connection lost (${err.message}); reconnecting`);
      this.scheduleReconnect();
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.connect();
    }, 1000);
    this.reconnectTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.users === 0 || --this.users > 0) return;
    this.starting = null;
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    if (!client) return;
    try {
      await client.query('UNLISTEN *');
      client.removeAllListeners();
      client.release();
    } catch (error) {
      client.release(error as Error);
    }
  }
}
