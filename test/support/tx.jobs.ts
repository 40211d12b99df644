import { Injectable } from '@nestjs/common';
import { Column, Entity, PrimaryGeneratedColumn, type EntityManager } from 'typeorm';
import { Job, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { Gates } from './gates.js';

/** A row a handler writes in its transaction: its effect, counted by the tests. */
@Entity({ name: 'invoice' })
export class Invoice {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('uuid', { name: 'job_id' })
  jobId!: string;

  @Column('text', { name: 'order_id' })
  orderId!: string;

  @Column('int')
  attempt!: number;
}

/** The table behind Invoice, in the DataSource's schema. */
export const INVOICE_TABLE = (schema: string) =>
  `CREATE TABLE "${schema}".invoice (id serial PRIMARY KEY, job_id uuid NOT NULL, order_id text NOT NULL, attempt int NOT NULL)`;

/** What the transactional jobs did, and gates a test opens. */
@Injectable()
export class TxLog extends Gates {
  readonly calls: string[] = [];
  readonly caught = new Map<string, Error>();
  readonly managers = new Map<string, boolean>();
  /** The backend pid of a run's transaction, for a test to terminate. */
  readonly pids = new Map<string, number>();
}

export type InvoiceMode =
  | 'plain'
  | 'throws-once'
  | 'twice'
  | 'throws-after'
  | 'continue'
  | 'continue-after'
  | 'gate'
  | 'raw'
  | 'connection-dies'
  | 'progress';

export interface InvoicePayload {
  order: string;
  mode?: InvoiceMode;
  /** For 'raw': the table to insert into. */
  table?: string;
}

/** The example: an invoice row and the job's success, in one transaction. */
@Job('tx-invoice', { maxAttempts: 3, backoff: { type: 'fixed', delay: 1_000 } })
export class Invoicing implements JobHandler<InvoicePayload> {
  constructor(private readonly log: TxLog) {}

  async run({ order, mode = 'plain', table }: InvoicePayload, ctx: JobContext) {
    this.log.calls.push(`${order}#${ctx.attempt}`);
    if (mode === 'continue') ctx.continueWith(Invoicing, { order: `${order}-next` });
    if (mode === 'progress') {
      // The second report comes within the throttle: it is still pending when the transaction opens.
      await ctx.progress(0.25, 'first');
      await ctx.progress(0.5, 'second');
    }
    const result = await ctx.transaction(async (manager) => {
      if (mode === 'raw') {
        // No entity on a DataSource the module opened: plain SQL on the transaction's connection.
        await manager.query(`INSERT INTO ${table} (job_id, order_id, attempt) VALUES ($1, $2, $3)`, [
          ctx.jobId,
          order,
          ctx.attempt,
        ]);
        return { invoiced: order };
      }
      await manager.insert(Invoice, { jobId: ctx.jobId, orderId: order, attempt: ctx.attempt });
      if (mode === 'throws-once' && ctx.attempt === 1) throw new Error('tax service down');
      if (mode === 'connection-dies' && ctx.attempt === 1) {
        const [row] = (await manager.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;
        this.log.pids.set(order, row!.pid);
        await this.log.wait(order);
        // The test terminated the backend: return as if nothing happened, once TypeORM has seen it.
        while (!manager.queryRunner!.isReleased) await new Promise((r) => setTimeout(r, 10));
      }
      if (mode === 'gate' && ctx.attempt === 1) await this.log.wait(order);
      return { invoiced: order };
    });
    if (mode === 'twice') {
      try {
        await ctx.transaction(async (manager) => {
          await manager.insert(Invoice, { jobId: ctx.jobId, orderId: `${order}-second`, attempt: ctx.attempt });
          return 'second';
        });
      } catch (error) {
        this.log.caught.set(order, error as Error);
      }
    }
    if (mode === 'continue-after') {
      try {
        ctx.continueWith(Invoicing, { order: `${order}-late` });
      } catch (error) {
        this.log.caught.set(order, error as Error);
      }
    }
    if (mode === 'throws-after') throw new Error('the receipt mailer is down');
    return result;
  }
}

/**
 * Transactional steps: `reserve` in a transaction of its own, then, with
 * `joined`, a `ledger` step inside ctx.transaction() that rolls back with
 * it on attempt 1.
 */
@Job('tx-reserve', { maxAttempts: 3, backoff: { type: 'fixed', delay: 1_000 } })
export class Reserving implements JobHandler<{ order: string; joined?: boolean }> {
  constructor(private readonly log: TxLog) {}

  async run({ order, joined }: { order: string; joined?: boolean }, ctx: JobContext) {
    const write = (manager: EntityManager, what: string) =>
      manager.insert(Invoice, { jobId: ctx.jobId, orderId: `${order}:${what}`, attempt: ctx.attempt });
    await ctx.step('reserve', { transaction: true }, async (manager) => {
      this.log.calls.push(`${order}:reserve#${ctx.attempt}`);
      await write(manager, 'reserve');
      return { reserved: order };
    });
    if (!joined) return 'reserved';
    return ctx.transaction(async (manager) => {
      await ctx.step('ledger', { transaction: true }, async (inner) => {
        this.log.calls.push(`${order}:ledger#${ctx.attempt}`);
        this.log.managers.set(`${order}#${ctx.attempt}`, inner === manager);
        await write(inner, 'ledger');
      });
      if (ctx.attempt === 1) throw new Error('the ledger and its step roll back together');
      await write(manager, 'final');
      return 'booked';
    });
  }
}
