import { Logger } from '@nestjs/common';
import type { ClaimedJob, FinishedAttempt } from '../../../lib/model/index.js';
import type { QueueConfig, QueueStorage } from '../../../lib/storage/queues/queue-storage.interface.js';
import { AdaptivePrefetch } from '../../../lib/worker/claiming/adaptive-prefetch.js';
import { ControlledLedger } from '../../../lib/worker/claiming/controlled-ledger.js';
import { QueueSettings } from '../../../lib/worker/claiming/queue-settings.js';

/**
 * The ledger's own bookkeeping: what it holds per queue and what it asks for. It reads the queues'
 * settings through QueueSettings, fed here by a hand-written in-memory QueueStorage (its `configs`
 * read only, the one method QueueSettings calls): the behaviour under test is the ledger's counts,
 * not the settings' SQL. The prefetch is the real AdaptivePrefetch on a clock of the test's.
 */
const config = (queue: string, o: Partial<QueueConfig>): QueueConfig => ({
  queue,
  concurrency: null,
  concurrencySource: 'code',
  rateLimit: null,
  rateSource: 'code',
  service: null,
  paused: false,
  hasGroups: false,
  hasSerial: false,
  groupMinInflight: 2,
  groupShare: 0.5,
  groupConcurrency: null,
  groupRateLimit: null,
  groupLimits: 0,
  names: [],
  ...o,
});

const CONFIGS = [
  config('limited', { concurrency: 4 }),
  config('other-limited', { concurrency: 2 }),
  config('paused-limited', { concurrency: 4, paused: true }),
  config('grouped', { hasGroups: true }),
  config('rated', { rateLimit: { max: 10, per: 1000 } }),
];

class InMemoryQueueConfigs {
  constructor(readonly list: QueueConfig[]) {}
  configs(): Promise<QueueConfig[]> {
    return Promise.resolve(this.list);
  }
}

let now = 0;
let seq = 0;

async function ledgerWith(configs = CONFIGS, prefetch = new AdaptivePrefetch(10, 500, 100, () => now)) {
  const storage = new InMemoryQueueConfigs(configs) as unknown as QueueStorage;
  const settings = new QueueSettings(storage, new Logger('test'));
  await settings.refresh();
  return { ledger: new ControlledLedger(settings, prefetch), settings };
}

function job(queue: string, o: Partial<ClaimedJob> = {}): ClaimedJob {
  seq++;
  return {
    id: `01a22d04-0000-7000-8000-${String(seq).padStart(12, '0')}`,
    name: 'work',
    queue,
    payload: {},
    attempt: 1,
    maxAttempts: 3,
    timeoutMs: null,
    batchId: null,
    ...o,
  };
}

const success = (j: ClaimedJob, successor?: string): FinishedAttempt => ({
  job: j,
  outcome: { kind: 'succeeded', result: null },
  ...(successor ? { successor } : {}),
});

/** Claims `jobs` and ends them all: their outcomes are on their way. */
function claimAndEnd(ledger: ControlledLedger, jobs: ClaimedJob[]): FinishedAttempt[] {
  ledger.claimed(jobs);
  for (const j of jobs) ledger.ended(j);
  return jobs.map((j) => success(j));
}

beforeEach(() => {
  now = 0;
});

describe('ControlledLedger.room', () => {
  it('lets a limited queue claim no more than its free slots: no depth beyond them', async () => {
    const { ledger } = await ledgerWith();
    expect(ledger.room('limited', 4, 0)).toBe(4);
    expect(ledger.room('limited', 4, 3)).toBe(1);
    expect(ledger.room('limited', 4, 4)).toBe(0);
    expect(ledger.room('limited', 4, 6)).toBe(-2);
  });

  it('gives a rate-limited queue no depth either', async () => {
    const { ledger } = await ledgerWith();
    expect(ledger.room('rated', 3, 1)).toBe(2);
  });

  it('gives a grouped queue as many again as its slots, or what they run in 10 ms at the measured rate when that is more', async () => {
    const prefetch = new AdaptivePrefetch(10, 500, 100, () => now);
    const { ledger } = await ledgerWith(CONFIGS, prefetch);
    expect(ledger.room('grouped', 4, 1)).toBe(4 + 4 - 1);
    // 2,000 completions in 100 ms: 20,000 a second, 200 in 10 ms.
    for (let i = 0; i < 1999; i++) prefetch.recordCompletion();
    now = 100;
    prefetch.recordCompletion();
    expect(prefetch.jobsWithin(10)).toBe(200);
    expect(ledger.room('grouped', 4, 1)).toBe(4 + 200 - 1);
    // The limited queue ignores the rate.
    expect(ledger.room('limited', 4, 1)).toBe(3);
  });

  it('gives a limited queue no room while one of its ended jobs’ outcome is unwritten, and room again once it is released', async () => {
    const { ledger } = await ledgerWith();
    const [a] = claimAndEnd(ledger, [job('limited')]);
    expect(ledger.room('limited', 4, 0)).toBe(0);
    // Another queue is not held back.
    expect(ledger.room('other-limited', 2, 0)).toBe(2);
    ledger.released(a!.job);
    expect(ledger.room('limited', 4, 0)).toBe(4);
  });

  it('does not hold back a grouped queue (not limited) for its unwritten outcomes', async () => {
    const { ledger } = await ledgerWith();
    claimAndEnd(ledger, [job('grouped')]);
    expect(ledger.room('grouped', 2, 0)).toBe(4);
  });
});

describe('ControlledLedger: what it holds', () => {
  it('holds a job under its latest claim only: the earlier attempt’s end and release free nothing', async () => {
    const { ledger } = await ledgerWith();
    const first = job('limited');
    const again = { ...first, attempt: 2 };
    ledger.claimed([first]);
    expect(ledger.holds(first)).toBe(true);
    ledger.claimed([again]);
    expect(ledger.holds(first)).toBe(false);
    expect(ledger.holds(again)).toBe(true);
    ledger.ended(first);
    // The stale end counted nothing unwritten.
    expect(ledger.room('limited', 4, 0)).toBe(4);
    expect(ledger.released(first)).toBe(false);
    expect(ledger.holds(again)).toBe(true);
  });

  it('ignores the end of a job it never held (a plain queue’s)', async () => {
    const { ledger } = await ledgerWith();
    const plain = job('limited');
    ledger.ended(plain);
    expect(ledger.room('limited', 4, 0)).toBe(4);
    expect(ledger.released(plain)).toBe(false);
  });

  it('says a released job’s queue is worth another look once, and not after', async () => {
    const { ledger } = await ledgerWith();
    const [a] = claimAndEnd(ledger, [job('limited')]);
    expect(ledger.released(a!.job)).toBe(true);
    expect(ledger.holds(a!.job)).toBe(false);
    expect(ledger.released(a!.job)).toBe(false);
  });

  it('counts unwritten outcomes per queue, down to none as each is released', async () => {
    const { ledger } = await ledgerWith();
    const attempts = claimAndEnd(ledger, [job('limited'), job('limited'), job('limited')]);
    ledger.released(attempts[0]!.job);
    ledger.released(attempts[1]!.job);
    expect(ledger.room('limited', 4, 0)).toBe(0);
    ledger.released(attempts[2]!.job);
    expect(ledger.room('limited', 4, 0)).toBe(4);
  });
});

describe('ControlledLedger.queueToClaimOnWrite', () => {
  it('claims for a limited queue on the write that carries every unwritten outcome of it, for no more than the idle slots', async () => {
    const { ledger } = await ledgerWith();
    const attempts = claimAndEnd(ledger, [job('limited'), job('limited')]);
    expect(ledger.queueToClaimOnWrite(attempts, 3)).toBe('limited');
    expect(ledger.incoming).toBe(3);
  });

  it('does not claim on a write that carries only some of the queue’s unwritten outcomes: a later write frees more', async () => {
    const { ledger } = await ledgerWith();
    const attempts = claimAndEnd(ledger, [job('limited'), job('limited')]);
    expect(ledger.queueToClaimOnWrite(attempts.slice(0, 1), 3)).toBeNull();
    expect(ledger.incoming).toBe(0);
  });

  it('asks for the lesser of the idle slots and the room the cap leaves, and not at all without room', async () => {
    const { ledger } = await ledgerWith();
    const attempts = claimAndEnd(ledger, [job('limited')]);
    expect(ledger.queueToClaimOnWrite(attempts, 5, () => 0)).toBeNull();
    expect(ledger.queueToClaimOnWrite(attempts, 5, (q) => (q === 'limited' ? 2 : 0))).toBe('limited');
    expect(ledger.incoming).toBe(2);
  });

  it('with no idle slot, claims only for a queue where a job claimed ahead took a success’s place', async () => {
    const { ledger } = await ledgerWith();
    const [a] = claimAndEnd(ledger, [job('limited')]);
    expect(ledger.queueToClaimOnWrite([a!], 0)).toBeNull();
    expect(ledger.queueToClaimOnWrite([success(a!.job, 'ahead-1')], 0, () => 3)).toBe('limited');
    // For the idle slots, none: the successor was already counted.
    expect(ledger.incoming).toBe(0);
  });

  it('keeps to one claim on an outcome write at a time per queue, until it is answered', async () => {
    const { ledger } = await ledgerWith();
    const first = claimAndEnd(ledger, [job('limited')]);
    expect(ledger.queueToClaimOnWrite(first, 2)).toBe('limited');
    ledger.released(first[0]!.job);
    const second = claimAndEnd(ledger, [job('limited')]);
    expect(ledger.queueToClaimOnWrite(second, 2)).toBeNull();
    ledger.writeAnswered('limited', first, []);
    expect(ledger.incoming).toBe(0);
    expect(ledger.queueToClaimOnWrite(second, 2)).toBe('limited');
  });

  it('never claims for a queue that is not limited, a paused one, or jobs it does not hold as ending', async () => {
    const { ledger } = await ledgerWith();
    expect(ledger.queueToClaimOnWrite(claimAndEnd(ledger, [job('grouped')]), 4)).toBeNull();
    expect(ledger.queueToClaimOnWrite(claimAndEnd(ledger, [job('rated')]), 4)).toBeNull();
    expect(ledger.queueToClaimOnWrite(claimAndEnd(ledger, [job('paused-limited')]), 4)).toBeNull();
    const claimedOnly = job('limited');
    ledger.claimed([claimedOnly]);
    expect(ledger.queueToClaimOnWrite([success(claimedOnly)], 4)).toBeNull();
  });

  it('sums what every queue’s pending claim asked for in incoming', async () => {
    const { ledger } = await ledgerWith();
    expect(ledger.queueToClaimOnWrite(claimAndEnd(ledger, [job('limited')]), 3)).toBe('limited');
    expect(ledger.queueToClaimOnWrite(claimAndEnd(ledger, [job('other-limited')]), 2)).toBe('other-limited');
    expect(ledger.incoming).toBe(5);
    ledger.writeAnswered('limited', [], null);
    expect(ledger.incoming).toBe(2);
  });
});

describe('ControlledLedger.writeAnswered', () => {
  it('holds what the claim got, and takes the write’s claim as the look its jobs’ ends called for', async () => {
    const { ledger } = await ledgerWith();
    const attempts = claimAndEnd(ledger, [job('limited'), job('limited')]);
    expect(ledger.queueToClaimOnWrite(attempts, 2)).toBe('limited');
    const got = [job('limited'), job('limited')];
    ledger.writeAnswered('limited', attempts, got);
    expect(ledger.incoming).toBe(0);
    expect(got.every((j) => ledger.holds(j))).toBe(true);
    expect(attempts.map((a) => ledger.released(a.job))).toEqual([false, false]);
    // Released and written: the queue has room again, less what the claim got.
    expect(ledger.room('limited', 4, got.length)).toBe(2);
  });

  it('after a failed write (null), holds nothing new and leaves the ends asking for another look', async () => {
    const { ledger } = await ledgerWith();
    const attempts = claimAndEnd(ledger, [job('limited')]);
    expect(ledger.queueToClaimOnWrite(attempts, 2)).toBe('limited');
    ledger.writeAnswered('limited', attempts, null);
    expect(ledger.incoming).toBe(0);
    expect(ledger.released(attempts[0]!.job)).toBe(true);
  });

  it('takes the claim as the look only for that queue’s jobs in the write, not another queue’s', async () => {
    const { ledger } = await ledgerWith();
    const limited = claimAndEnd(ledger, [job('limited')]);
    const other = claimAndEnd(ledger, [job('other-limited'), job('other-limited')]);
    const write = [...limited, ...other.slice(0, 1)];
    expect(ledger.queueToClaimOnWrite(write, 2)).toBe('limited');
    ledger.writeAnswered('limited', write, []);
    expect(ledger.released(limited[0]!.job)).toBe(false);
    expect(ledger.released(other[0]!.job)).toBe(true);
  });
});
