import { JobsError, JobsModule } from 'nestjs-durable-jobs';
import { resolveWorkerOptions, type WorkerOptions } from '../../lib/worker/worker-options.js';

/** worker.queues in its two forms, as the worker reads them, and what bad input gets. */
describe('worker.queues', () => {
  it('an array serves its queues in its order, with no cap of their own', () => {
    const o = resolveWorkerOptions({ queues: ['critical', 'default'] });
    expect(o.queues).toEqual(['critical', 'default']);
    expect([...o.queueSlots]).toEqual([]);
  });

  it('an object serves its keys in their order, and caps those whose entry says so', () => {
    const o = resolveWorkerOptions({
      concurrency: 10,
      queues: { video: { concurrency: 2 }, mail: {}, thumbs: { concurrency: 10 } },
    });
    expect(o.queues).toEqual(['video', 'mail', 'thumbs']);
    expect([...o.queueSlots]).toEqual([
      ['video', 2],
      ['thumbs', 10],
    ]);
  });

  it('left out, or empty in either form: every queue, with no cap', () => {
    for (const queues of [undefined, [], {}]) {
      const o = resolveWorkerOptions({ queues } as WorkerOptions);
      expect(o.queues).toBeNull();
      expect(o.queueSlots.size).toBe(0);
    }
  });

  it('copies what it is given: a later change to the options object changes nothing', () => {
    const queues: Record<string, { concurrency?: number }> = { video: { concurrency: 2 } };
    const o = resolveWorkerOptions({ queues });
    queues.video!.concurrency = 5;
    queues.mail = {};
    expect(o.queues).toEqual(['video']);
    expect(o.queueSlots.get('video')).toBe(2);
  });

  const refused = (options: unknown): string => {
    try {
      resolveWorkerOptions(options as WorkerOptions);
    } catch (error) {
      expect(error).toBeInstanceOf(JobsError);
      return (error as Error).message;
    }
    throw new Error(`accepted ${JSON.stringify(options)}`);
  };

  it('neither an array nor an object: a JobsError with both forms as the fix', () => {
    for (const queues of ['video', 3, null, true]) {
      const message = refused({ queues });
      expect(message).toContain('"worker.queues" must be an array of queue names');
      expect(message).toContain(
        "Potential fix: worker.queues: ['video', 'mail'], or worker.queues: { video: { concurrency: 2 }, mail: {} }",
      );
    }
  });

  it('an entry that is not an object names the queue and the fix', () => {
    for (const entry of [2, null, 'x', [1]]) {
      expect(refused({ queues: { video: entry } })).toContain(
        '"worker.queues.video" must be an object of the queue\'s options on this instance',
      );
    }
  });

  it('a cap that is not a positive integer names worker.queues.<name>.concurrency', () => {
    for (const cap of [0, -1, 1.5, '2', null, Number.NaN]) {
      const message = refused({ concurrency: 10, queues: { mail: {}, video: { concurrency: cap } } });
      expect(message).toMatch(/^JobsModule: "worker\.queues\.video\.concurrency" must be an integer >= 1, got /);
      expect(message).toContain('Potential fix: worker.queues.video.concurrency: 2.');
    }
  });

  it('a cap above worker.concurrency, the default 10 included, could never be reached', () => {
    expect(refused({ concurrency: 4, queues: { video: { concurrency: 5 } } })).toBe(
      'JobsModule: "worker.queues.video.concurrency" is 5, more than the 4 jobs this instance runs at once ("worker.concurrency"): it could never be reached. ' +
        'Potential fix: worker.queues.video.concurrency: 4 or less, or raise worker.concurrency to 5.',
    );
    expect(refused({ queues: { video: { concurrency: 11 } } })).toContain('more than the 10 jobs');
    expect(
      resolveWorkerOptions({ concurrency: 4, queues: { video: { concurrency: 4 } } }).queueSlots.get('video'),
    ).toBe(4);
  });

  it('a queue name that cannot be one, in either form', () => {
    expect(refused({ queues: ['ok', ''] })).toContain('"worker.queues[1]" must be a non-empty string');
    expect(refused({ queues: { '': {} } })).toContain('must be a non-empty string');
  });

  it('an unknown key inside an entry is refused at JobsModule.forRoot(), with the key meant', () => {
    const forRoot = () =>
      JobsModule.forRoot({ connection: 'postgres://x', worker: { queues: { video: { concurency: 2 } as never } } });
    expect(forRoot).toThrow(JobsError);
    expect(forRoot).toThrow(
      'JobsModule.forRoot(): unknown option "worker.queues.video.concurency". Did you mean "worker.queues.video.concurrency"?',
    );
    // The array form holds names, not options.
    expect(() => JobsModule.forRoot({ connection: 'postgres://x', worker: { queues: ['video'] } })).not.toThrow();
  });
});
