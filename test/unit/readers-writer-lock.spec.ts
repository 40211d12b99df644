import { ReadersWriterLock } from '../../lib/worker/readers-writer-lock.js';

/** Lets every promise callback queued so far run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A holder the test lets go of: `entered` once the lock granted it, done
 * when `release` (or `fail`) is called.
 */
function holder(lock: ReadersWriterLock, kind: 'shared' | 'exclusive', log: string[], name: string) {
  let release!: () => void;
  let fail!: (error: Error) => void;
  const work = new Promise<void>((resolve, reject) => {
    release = resolve;
    fail = reject;
  });
  const state = { entered: false };
  const run = (kind === 'shared' ? lock.runShared.bind(lock) : lock.runExclusive.bind(lock)) as (
    fn: () => Promise<void>,
  ) => Promise<void>;
  const done = run(async () => {
    state.entered = true;
    log.push(`${name} in`);
    await work;
    log.push(`${name} out`);
  });
  return { state, done, release: () => release(), fail: (error: Error) => fail(error) };
}

describe('ReadersWriterLock', () => {
  it('lets shared holders overlap', async () => {
    const lock = new ReadersWriterLock();
    const log: string[] = [];
    const a = holder(lock, 'shared', log, 'a');
    const b = holder(lock, 'shared', log, 'b');
    await settle();
    expect(log).toEqual(['a in', 'b in']);
    b.release();
    a.release();
    await Promise.all([a.done, b.done]);
    expect(log).toEqual(['a in', 'b in', 'b out', 'a out']);
  });

  it('grants an exclusive holder only once every shared one has let go, and nobody while it holds', async () => {
    const lock = new ReadersWriterLock();
    const log: string[] = [];
    const a = holder(lock, 'shared', log, 'a');
    const b = holder(lock, 'shared', log, 'b');
    const x = holder(lock, 'exclusive', log, 'x');
    await settle();
    expect(x.state.entered).toBe(false);
    a.release();
    await settle();
    expect(x.state.entered).toBe(false);
    b.release();
    await settle();
    expect(x.state.entered).toBe(true);

    const c = holder(lock, 'shared', log, 'c');
    const y = holder(lock, 'exclusive', log, 'y');
    await settle();
    expect([c.state.entered, y.state.entered]).toEqual([false, false]);
    x.release();
    await settle();
    // Granted in the order asked: c alone (y excludes it), then y.
    expect([c.state.entered, y.state.entered]).toEqual([true, false]);
    c.release();
    await settle();
    expect(y.state.entered).toBe(true);
    y.release();
    await Promise.all([a.done, b.done, x.done, c.done, y.done]);
    expect(log).toEqual(['a in', 'b in', 'a out', 'b out', 'x in', 'x out', 'c in', 'c out', 'y in', 'y out']);
  });

  it('does not let shared holders asking after a waiting exclusive one go first: renewal is never starved', async () => {
    const lock = new ReadersWriterLock();
    const log: string[] = [];
    const a = holder(lock, 'shared', log, 'a');
    await settle();
    const x = holder(lock, 'exclusive', log, 'x');
    const later = [holder(lock, 'shared', log, 'b'), holder(lock, 'shared', log, 'c')];
    await settle();
    // The lock is only shared now, yet b and c wait behind x.
    expect(later.map((h) => h.state.entered)).toEqual([false, false]);
    a.release();
    await settle();
    expect(x.state.entered).toBe(true);
    expect(later.map((h) => h.state.entered)).toEqual([false, false]);
    x.release();
    await settle();
    // Shared holders queued together are granted together.
    expect(later.map((h) => h.state.entered)).toEqual([true, true]);
    for (const h of later) h.release();
    await Promise.all([a.done, x.done, ...later.map((h) => h.done)]);
    expect(log).toEqual(['a in', 'a out', 'x in', 'x out', 'b in', 'c in', 'b out', 'c out']);
  });

  it('lets go when the work fails, and passes the error on', async () => {
    const lock = new ReadersWriterLock();
    const log: string[] = [];
    const a = holder(lock, 'shared', log, 'a');
    const x = holder(lock, 'exclusive', log, 'x');
    const b = holder(lock, 'shared', log, 'b');
    await settle();
    a.fail(new Error('flush failed'));
    await expect(a.done).rejects.toThrow('flush failed');
    await settle();
    expect(x.state.entered).toBe(true);
    x.fail(new Error('renewal failed'));
    await expect(x.done).rejects.toThrow('renewal failed');
    await settle();
    expect(b.state.entered).toBe(true);
    b.release();
    await b.done;
    // A lock that let go of everything grants an exclusive holder at once.
    await expect(lock.runExclusive(async () => 'free')).resolves.toBe('free');
  });
});
