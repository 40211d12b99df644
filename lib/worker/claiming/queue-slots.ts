import type { ClaimedJob } from '../../model/index.js';
import type { ClaimRequest } from '../../storage/jobs/claim/claim-storage.interface.js';

/**
 * This instance's own caps on queues (`worker.queues.<name>.concurrency`):
 * the most jobs of a capped queue it holds at once, counting those running,
 * those claimed and waiting to start (claimed ahead included) and those a
 * claim under way asks for. Holding no more than the cap, it can start any
 * job it holds without a check, and never prefetches a capped queue's jobs
 * away from other instances. Uncapped queues are not counted.
 *
 * A capped queue's freed slot is worth a claim at once, even a claim of one
 * job below the worker's usual batch (Claimer.topUp): `freed` keeps the
 * queues whose slot came free since they were last asked.
 */
export class QueueSlots {
  private readonly running = new Map<string, number>();
  /** Jobs asked for by claims under way (passes and claims on outcome writes), jobs ahead included. */
  private readonly asked = new Map<string, number>();
  private readonly freedQueues = new Set<string>();

  constructor(
    private readonly caps: ReadonlyMap<string, number>,
    /** The jobs of a queue claimed here and not started. */
    private readonly unstarted: (queue: string) => number,
  ) {}

  /** How many more of the queue's jobs this instance may hold now: Infinity when uncapped. */
  room(queue: string): number {
    const cap = this.caps.get(queue);
    if (cap === undefined) return Infinity;
    return cap - (this.running.get(queue) ?? 0) - (this.asked.get(queue) ?? 0) - this.unstarted(queue);
  }

  /** A claim of `request` is under way: what it may bring counts until answered. */
  asking(request: ClaimRequest): void {
    this.add(this.asked, request.queue, request.limit + (request.ahead ?? 0));
  }

  /** The claim of `request` is answered (its jobs are unstarted here now) or failed. */
  answered(request: ClaimRequest): void {
    this.add(this.asked, request.queue, -(request.limit + (request.ahead ?? 0)));
  }

  /** An attempt of the job started here. */
  started(job: ClaimedJob): void {
    this.add(this.running, job.queue, 1);
  }

  /** An attempt of the job ended here: its slot is free. */
  ended(job: ClaimedJob): void {
    this.add(this.running, job.queue, -1);
  }

  /** A capped queue may claim again: asked at once (takeFreed), however few jobs that claim may get. */
  freed(queue: string): void {
    if (this.caps.has(queue)) this.freedQueues.add(queue);
  }

  /** Whether the queue was freed since it was last asked; asking it now clears it. */
  asks(queue: string): boolean {
    return this.freedQueues.delete(queue);
  }

  /** Capped queues freed since they were last asked (they stay so until asks()). */
  get anyFreed(): boolean {
    return this.freedQueues.size > 0;
  }

  private add(counts: Map<string, number>, queue: string, n: number): void {
    if (!this.caps.has(queue) || n === 0) return;
    const next = (counts.get(queue) ?? 0) + n;
    if (next > 0) counts.set(queue, next);
    else counts.delete(queue);
  }
}
