import type { EntityManager } from 'typeorm';
import {
  checkId,
  checkOptions,
  checkSignalName,
  databaseCall,
  describeValue,
  isTerminal,
  JobsError,
  JobsNotFoundError,
  serializeJsonValue,
  type Clock,
} from '../model/index.js';
import type { SignalStorage } from '../storage/jobs/signals/signal-storage.interface.js';
import { GET_EVENT_SHAPE, SIGNAL_OPTIONS_SHAPE, type GetEventOptions, type SignalOptions } from './durable-options.js';
import { checkWaitTimeout, notFound, type JobEndWaiters } from './job-end-waiters.js';

/** JobQueue's signals into jobs and reads of the values they publish. */
export class JobSignals {
  constructor(
    private readonly storage: SignalStorage,
    private readonly waiters: JobEndWaiters,
    private readonly clock: Clock,
    private readonly maxPayloadBytes: number,
  ) {}

  async signal(id: string, name: string, payload: unknown, options: SignalOptions | undefined): Promise<void> {
    const where = `signal(${typeof id === 'string' ? id : describeValue(id)}, ${typeof name === 'string' ? JSON.stringify(name) : '…'})`;
    id = checkId(where, id);
    name = checkSignalName(where, 'name', name, 'approval');
    const manager = checkOptions(where, options, '{ manager }', SIGNAL_OPTIONS_SHAPE)?.manager;
    const json = payload === undefined ? null : this.payloadJson(where, payload);
    const sent = await databaseCall(where, () =>
      this.storage.send(id, name, json, this.clock.now(), manager as EntityManager | undefined),
    );
    if (sent.outcome === 'not-found') {
      throw new JobsNotFoundError(`${where}: no such job. Potential fix: check the id returned by enqueue().`);
    }
    if (sent.outcome === 'finished') {
      throw new JobsError(
        `${where}: the job already ended (${sent.state}), so nothing would ever consume the signal; nothing was stored. ` +
          `Potential fix: signal jobs that are waiting or still to run (look at get(id).state first), or retry() the job.`,
      );
    }
  }

  async getEvent<T>(id: string, key: string, options: GetEventOptions | undefined): Promise<T | null> {
    const where = `getEvent(${typeof id === 'string' ? id : describeValue(id)}, ${typeof key === 'string' ? JSON.stringify(key) : '…'})`;
    id = checkId(where, id);
    key = checkSignalName(where, 'key', key, 'payment-url');
    const timeout = checkWaitTimeout(
      where,
      checkOptions(where, options, '{ timeout: 30_000 }', GET_EVENT_SHAPE)?.timeout,
    );
    const deadline = Date.now() + (timeout ?? 0);
    let flagged = false;
    for (;;) {
      const read = await databaseCall(where, () => this.storage.getEvent(id, key));
      if (read.outcome === 'not-found') {
        throw notFound(where);
      }
      if (read.found) return read.value as T;
      // An ended job publishes nothing more: waiting on could only run out.
      const left = deadline - Date.now();
      if (isTerminal(read.state) || left <= 0) return null;
      if (!flagged) {
        // Its end is announced too, so a job that ends without publishing stops the wait at once.
        flagged = true;
        await databaseCall(where, () => this.waiters.watchEnd(id));
        continue;
      }
      await this.waiters.nextChange(id, left);
    }
  }

  private payloadJson(where: string, payload: unknown): string {
    const json = serializeJsonValue(
      payload,
      (path, reason) =>
        new JobsError(
          `${where}: the payload is not JSON-serialisable at ${path} (${reason}). Potential fix: pass plain data (objects, arrays, strings, finite numbers, booleans, null).`,
        ),
    );
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > this.maxPayloadBytes) {
      throw new JobsError(
        `${where}: the payload is ${bytes} bytes, over maxPayloadBytes (${this.maxPayloadBytes}); nothing was stored. ` +
          `Potential fix: send an id of data stored elsewhere, or raise JobsModule's "maxPayloadBytes".`,
      );
    }
    return json;
  }
}
