import type { LoggerService } from '@nestjs/common';
import type { ClaimedJob } from '../model/index.js';
import type { OutcomeStorage } from '../storage/jobs/outcomes/outcome-storage.interface.js';

interface Slot {
  lastWrite: number;
  pending: { fraction: number; message: string | null } | null;
  timer: NodeJS.Timeout | null;
  writing: Promise<void>;
}

/**
 * Throttles progress writes per job: a handler may report in a tight loop,
 * but at most one write per interval reaches the database, and the latest
 * value always lands.
 */
export class ProgressWriter {
  /** By attempt, not job id: an attempt that lost its lease must not flush or drop its job's next attempt's reports. */
  private readonly slots = new Map<ClaimedJob, Slot>();

  constructor(
    private readonly storage: OutcomeStorage,
    private readonly workerId: string,
    private readonly intervalMs: number,
    private readonly logger: LoggerService,
  ) {}

  write(job: ClaimedJob, fraction: number, message: string | null): Promise<void> {
    let slot = this.slots.get(job);
    if (!slot) {
      slot = { lastWrite: 0, pending: null, timer: null, writing: Promise.resolve() };
      this.slots.set(job, slot);
    }
    slot.pending = { fraction, message };
    const wait = slot.lastWrite + this.intervalMs - Date.now();
    if (wait <= 0) return this.flush(job, slot);
    if (!slot.timer) {
      const s = slot;
      s.timer = setTimeout(() => void this.flush(job, s), wait);
      s.timer.unref();
    }
    return Promise.resolve();
  }

  private flush(job: ClaimedJob, slot: Slot): Promise<void> {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    const value = slot.pending;
    slot.pending = null;
    if (!value) return slot.writing;
    slot.lastWrite = Date.now();
    slot.writing = slot.writing
      .then(() => this.storage.updateProgress(this.workerId, job, value.fraction, value.message))
      .catch((e: Error) => this.logger.warn(`Writing progress of job ${job.id} failed: ${e.message}`));
    return slot.writing;
  }

  /**
   * The attempt ended: writes what is pending and lets go. The caller waits
   * for it before handing the outcome on: once the outcome is written the
   * job is no longer active, and the fence would refuse the last report.
   * Undefined (nothing to wait for) when the job never reported progress.
   */
  forget(job: ClaimedJob): Promise<void> | undefined {
    const slot = this.slots.get(job);
    if (!slot) return undefined;
    this.slots.delete(job);
    return this.flush(job, slot);
  }

  async drain(): Promise<void> {
    await Promise.all([...this.slots.values()].map((s) => s.writing));
  }
}
