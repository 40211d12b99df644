import { Logger } from '@nestjs/common';
import pg from 'pg';
import { settlesWithin } from '../../model/index.js';
import { pgPoolOf } from '../sql/pg-driver.js';
import { quoteIdent } from '../sql/sql-identifiers.js';
import { pgSessionSettings } from '../sql/timeouts.js';
import type { StorageContext } from '../sql/storage-context.js';
import { JobNotifications, type NotificationSubscriber } from './job-notifications.interface.js';
import { decodeNotification } from '../sql/notification-topics.js';

/** How long stopping may wait for the database to acknowledge UNLISTEN before the socket is dropped. */
const STOP_WITHIN_MS = 2_000;

/**
 * One connection per instance that LISTENs on the schema's channel: a
 * client of its own (made from the settings of TypeORM's pool) rather than
 * one borrowed from the app's pool for the app's whole life. It is re-made
 * after errors; polling covers the gap, and subscribers hear of the
 * reconnect so they can look for what they missed.
 */
export class NotificationListener extends JobNotifications {
  private readonly logger = new Logger('JobNotifications');
  private client: pg.Client | null = null;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private readonly subscribers = new Set<NotificationSubscriber>();
  /** The worker and the scheduler share one connection: it closes when the last of them stops. */
  private users = 0;
  private starting: Promise<void> | null = null;
  /** Set when a connection failed or was lost: what was sent meanwhile never arrived. */
  private gap = false;

  constructor(private readonly context: StorageContext) {
    super();
  }

  subscribe(subscriber: NotificationSubscriber): () => void {
    this.subscribers.add(subscriber);
    return () => this.subscribers.delete(subscriber);
  }

  async start(): Promise<void> {
    this.users++;
    if (!this.listening) return;
    if (this.users > 1) return this.starting ?? undefined;
    this.stopped = false;
    this.gap = false;
    this.starting = this.connect();
    await this.starting;
  }

  /** False behind a transaction pooler without `directConnection`: LISTEN there is accepted and never delivers. */
  get listening(): boolean {
    return this.context.plan.listen !== 'none';
  }

  /** Whether the LISTEN connection is open now. */
  get connected(): boolean {
    return this.client !== null;
  }

  private newClient(): pg.Client {
    const { plan } = this.context;
    // pg keeps a pool's settings as `options`; its typings leave them out.
    const base =
      plan.listen === 'direct' && plan.direct
        ? plan.direct
        : (pgPoolOf(this.context.dataSource) as unknown as { options: pg.ClientConfig }).options;
    return new pg.Client({ ...base, ...pgSessionSettings(this.context.timeouts, 'listener') });
  }

  private async connect(): Promise<void> {
    const client = this.newClient();
    // Errors after connect (a dropped socket) arrive here; before it, connect() rejects.
    client.on('error', (err) => this.lost(client, err));
    try {
      await client.connect();
      client.on('notification', (msg) => {
        if (msg.channel !== this.context.channel || msg.payload === undefined) return;
        const event = decodeNotification(msg.payload);
        if (!event) return;
        for (const s of this.subscribers) s.onNotification?.(event);
      });
      await client.query(`LISTEN ${quoteIdent(this.context.channel)}`);
      if (this.stopped) {
        await this.close(client);
        return;
      }
      this.client = client;
      // Anything sent while we were away is lost: let subscribers look for themselves.
      if (this.gap) for (const s of this.subscribers) s.onReconnect?.();
      this.gap = false;
    } catch (error) {
      this.gap = true;
      this.destroy(client);
      if (this.stopped) return;
      this.logger.warn(`LISTEN failed (${(error as Error).message}); retrying in 1 s, polling meanwhile`);
      this.scheduleReconnect();
    }
  }

  private lost(client: pg.Client, err: Error): void {
    if (this.client !== client) return;
    this.client = null;
    this.gap = true;
    this.destroy(client);
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
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    // A connect under way closes itself when it sees `stopped`; waiting for it could wait on a silent database.
    this.starting = null;
    const client = this.client;
    this.client = null;
    if (client) await this.close(client);
  }

  /** Ends the session politely if the database answers in time, otherwise drops the socket. */
  private async close(client: pg.Client): Promise<void> {
    client.removeAllListeners('notification');
    client.on('error', () => undefined);
    const ended = await settlesWithin(client.end(), STOP_WITHIN_MS);
    if (!ended) this.destroy(client);
  }

  /** Drops the socket; the client's later errors (its socket closing) are expected and ignored. */
  private destroy(client: pg.Client): void {
    client.removeAllListeners();
    client.on('error', () => undefined);
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  }
}
