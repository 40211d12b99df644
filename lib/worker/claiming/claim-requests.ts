import type { JobRegistry } from '../../discovery/job-registry.js';
import type { Clock } from '../../model/index.js';
import type { ClaimRequest } from '../../storage/jobs/claim/claim-storage.interface.js';
import type { ResolvedWorkerOptions } from '../worker-options.js';
import type { AdaptivePrefetch } from './adaptive-prefetch.js';
import type { HandlerTimes } from './handler-times.js';
import type { QueueSettings } from './queue-settings.js';
import type { QueueSlots } from './queue-slots.js';

/** What the requests are built from. */
interface ClaimRequestsDeps {
  workerId: string;
  registry: JobRegistry;
  clock: Clock;
  options: ResolvedWorkerOptions;
  settings: QueueSettings;
  prefetch: AdaptivePrefetch;
  handlerTimes: HandlerTimes;
  slots: QueueSlots;
}

/**
 * How much a worker claims: the most jobs it holds (its slots and the jobs
 * claimed ahead of them), the batch worth a claim, and each claim's request:
 * its limit within a capped queue's room here, whether it asks for a share
 * of a limit, and how many jobs it takes ahead.
 */
export class ClaimRequests {
  constructor(private readonly deps: ClaimRequestsDeps) {}

  /** The most jobs the worker holds: its slots, and the jobs claimed ahead of them. */
  capacity(): number {
    return this.deps.options.concurrency + this.prefetchNow();
  }

  /**
   * Claim once most of the buffer is free: a claim costs PostgreSQL ~0.5 ms
   * plus ~13 µs a job, so fewer, larger claims are cheaper (drain throughput
   * +15% over claiming at half, measured pairwise). The last tenth of the
   * buffer and the running jobs cover the claim's round trip.
   */
  minClaim(): number {
    return Math.max(1, Math.floor(this.prefetchNow() * 0.9));
  }

  /** A claim of up to `limit` jobs of `queue`, cut to the queue's room under this instance's cap. */
  of(queue: string, limit: number): ClaimRequest {
    const { workerId, registry, clock, options, settings, handlerTimes, slots } = this.deps;
    const room = slots.room(queue);
    const request: ClaimRequest = {
      workerId,
      queue,
      names: registry.names(),
      limit: Math.min(limit, room),
      now: clock.now(),
      leaseMs: options.lease,
    };
    if (settings.limited(queue) && handlerTimes.runLong(queue)) request.share = true;
    if (settings.limitedAsAWhole(queue)) {
      // A capped queue's jobs ahead are held here too: no more than its room leaves.
      const ahead = Math.min(options.concurrency, room - request.limit);
      if (ahead > 0) request.ahead = ahead;
    }
    return request;
  }

  private prefetchNow(): number {
    return this.deps.options.prefetch ?? this.deps.prefetch.value;
  }
}
