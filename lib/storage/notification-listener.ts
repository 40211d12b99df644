import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';

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
 * One connection per instance that LISTENs on the schema's channel. A
 * NOTIFY sent inside an enqueue transaction arrives only after COMMIT, which
 * is exactly when a worker may see the job. The connection is re-made after
 * errors; polling covers the gap.
 */
export class NotificationListener {
  private readonly logger = new Logger('JobNotifications');
  private client: PgListenClient | null = null;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private readonly handlers = new Set<(payload: string) => void>();
  /** The worker and the scheduler share one connection: it closes when the last of them stops. */
  private users = 0;
  private starting: Promise<void> | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly channel: string,
  ) {}

  subscribe(handler: (payload: string) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  async start(): Promise<void> {
    this.users++;
    if (this.users > 1) return this.starting ?? undefined;
    this.stopped = false;
    this.starting = this.connect();
    await this.starting;
  }

  private async connect(): Promise<void> {
    const pool = (this.dataSource.driver as unknown as { master: { connect(): Promise<PgListenClient> } }).master;
    try {
      const client = await pool.connect();
      client.on('notification', (msg) => {
        if (msg.channel !== this.channel || msg.payload === undefined) return;
        for (const handler of this.handlers) handler(msg.payload);
      });
      client.on('error', (err) => this.lost(client, err));
      await client.query(`LISTEN "${this.channel.replace(/"/g, '""')}"`);
      this.client = client;
      // Anything sent while we were away is lost: let subscribers look for themselves.
      for (const handler of this.handlers) handler('reconnected');
    } catch (error) {
      this.logger.warn(`LISTEN failed (${(error as Error).message}); retrying in 1 s, polling meanwhile`);
      this.scheduleReconnect();
    }
  }

  private lost(client: PgListenClient, err: Error): void {
    if (this.client !== client) return;
    this.client = null;
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
