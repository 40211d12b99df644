import {
  JobEvents,
  type AttemptEnded,
  type AttemptStarted,
  type ClaimedJob,
  type JobsEnqueued,
} from '../../lib/model/index.js';

const job: ClaimedJob = {
  id: '01a22d01-0000-7000-8000-000000000001',
  name: 'send-receipt',
  queue: 'emails',
  payload: { orderId: 1 },
  attempt: 1,
  maxAttempts: 3,
  timeoutMs: null,
  batchId: null,
};

describe('JobEvents', () => {
  it('is observed only while someone listens, so an unobserved worker takes no time', () => {
    const events = new JobEvents();
    expect(events.observed).toBe(false);
    const off = events.on(['failed', 'stalled'], () => undefined);
    expect(events.observed).toBe(true);
    off();
    off();
    expect(events.observed).toBe(false);
    const offAttempts = events.onAttemptEnded(() => undefined);
    expect(events.observed).toBe(true);
    offAttempts();
    expect(events.observed).toBe(false);
  });

  it('keeps attempt listeners (metrics) and job listeners apart: each hears only its own call', () => {
    const events = new JobEvents();
    const attempts: AttemptEnded[] = [];
    const heard: string[] = [];
    events.onAttemptEnded((e) => attempts.push(e));
    events.on(['succeeded', 'stalled'], (e) => void heard.push(e.event));
    events.attemptEnded({ job, outcome: 'succeeded', durationMs: 5 });
    expect(heard).toEqual([]);
    events.jobEnded(job, { kind: 'succeeded', result: 1 }, 5);
    events.jobEnded(
      job,
      { kind: 'stalled', reason: 'shutdown', error: { name: 'WorkerShutdownError', message: 'x' } },
      7,
    );
    expect(attempts).toEqual([{ job, outcome: 'succeeded', durationMs: 5 }]);
    expect(heard).toEqual(['succeeded', 'stalled']);
  });

  it('calls every listener even when one throws, and logs the throw with its label', () => {
    const lines: string[] = [];
    const events = new JobEvents({ error: (m) => void lines.push(m) });
    const heard: string[] = [];
    events.on(
      'retrying',
      () => {
        throw new Error('boom');
      },
      { label: 'Audit.onRetry' },
    );
    events.on('retrying', (e) => void heard.push(e.retryAt.toISOString()));
    const retryAt = new Date('2026-01-01T00:00:00Z');
    events.jobEnded(job, { kind: 'retry', error: { name: 'Error', message: 'down' }, retryAt }, 1);
    expect(heard).toEqual([retryAt.toISOString()]);
    expect(lines).toEqual([
      `Job event listener Audit.onRetry failed on 'retrying' of job send-receipt ${job.id} attempt 1: boom (the job's outcome stands)`,
    ]);
  });

  it('tells start and enqueue observers only while they listen, keeps the two apart, and survives one that throws', () => {
    const events = new JobEvents();
    expect([events.startsObserved, events.enqueuesObserved, events.observed]).toEqual([false, false, false]);
    const starts: AttemptStarted[] = [];
    const enqueues: JobsEnqueued[] = [];
    events.onAttemptStarted(() => {
      throw new Error('a broken observer');
    });
    const offStarts = events.onAttemptStarted((e) => void starts.push(e));
    const offEnqueues = events.onEnqueued((e) => void enqueues.push(e));
    // Start and enqueue observers do not make the worker time attempts for the ended-attempt listeners.
    expect([events.startsObserved, events.enqueuesObserved, events.observed]).toEqual([true, true, false]);
    events.attemptStarted({ job, waitMs: 12 });
    const written = { id: job.id, name: job.name, queue: job.queue, runAt: new Date(0), state: 'queued' as const };
    events.enqueued({ jobs: [written], inTransaction: false });
    // A call that wrote nothing (every unique key held) is no event.
    events.enqueued({ jobs: [], inTransaction: false });
    expect(starts).toEqual([{ job, waitMs: 12 }]);
    expect(enqueues).toEqual([{ jobs: [written], inTransaction: false }]);
    offStarts();
    offEnqueues();
    expect(events.enqueuesObserved).toBe(false);
    events.attemptStarted({ job, waitMs: 1 });
    expect(starts).toHaveLength(1);
  });

  it('refuses a listener that is not a function', () => {
    expect(() => new JobEvents().on('failed', 'log' as never)).toThrow(
      `JobEvents.on(): the listener must be a function, got the string "log". Potential fix: events.on('failed', (e) => …).`,
    );
  });
});
