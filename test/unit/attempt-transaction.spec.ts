import type { EntityManager } from 'typeorm';
import { JobsError, type ClaimedJob } from '../../lib/model/index.js';
import type { HandlerTransactionSource, StepStorage } from '../../lib/storage/jobs/step-storage.interface.js';
import { AttemptTransaction, type TransactionHost } from '../../lib/worker/attempt-transaction.js';

const job: ClaimedJob = {
  id: '01a22d01-0000-7000-8000-000000000002',
  name: 'invoice',
  queue: 'default',
  payload: {},
  attempt: 1,
  maxAttempts: 3,
  timeoutMs: null,
  batchId: null,
};

/** A storage that runs the body with a stand-in manager and records what was asked of it. */
function host(source: HandlerTransactionSource, writeSucceeds = true) {
  const calls: string[] = [];
  const storage = {
    handlerTransactions: source,
    handlerTransaction: async <T>(body: (m: EntityManager) => Promise<T>) => {
      calls.push('begin');
      try {
        const value = await body({} as EntityManager);
        calls.push('commit');
        return value;
      } catch (error) {
        calls.push('rollback');
        throw error;
      }
    },
  } as unknown as StepStorage;
  const h: TransactionHost = {
    job,
    storage,
    checkRunning: () => undefined,
    flushProgress: async () => void calls.push('progress'),
    checkResult: (value) => value,
    releaseForSuccess: () => [],
    succeeded: (result) => ({ kind: 'succeeded', result }),
    writeSuccess: async () => {
      calls.push('success');
      return writeSucceeds;
    },
    lost: () => new Error('lost'),
  };
  return { h, calls };
}

describe('ctx.transaction() (AttemptTransaction)', () => {
  it('is refused with a JobsError naming the fix when the storage has no TypeORM DataSource, before anything runs', async () => {
    const { h, calls } = host(null);
    const tx = new AttemptTransaction(h);
    let ran = false;
    const call = tx.run(async () => {
      ran = true;
    });
    await expect(call).rejects.toThrow(JobsError);
    await expect(call).rejects.toThrow(
      /ctx\.transaction\(\) in job "invoice" \(\S+\): the module's storage has no TypeORM DataSource.*Potential fix: configure JobsModule with "dataSource"/,
    );
    expect(ran).toBe(false);
    expect(calls).toEqual([]);
  });

  it('writes the success inside the transaction, then commits; a refused fence rolls back', async () => {
    const ok = host('shared');
    const tx = new AttemptTransaction(ok.h);
    await expect(tx.run(async () => 'done')).resolves.toBe('done');
    expect(ok.calls).toEqual(['progress', 'begin', 'success', 'commit']);
    expect(tx.committed).toBe(true);

    const refused = host('shared', false);
    const lost = new AttemptTransaction(refused.h);
    await expect(lost.run(async () => 'done')).rejects.toThrow('lost');
    expect(refused.calls).toEqual(['progress', 'begin', 'success', 'rollback']);
    expect(lost.committed).toBe(false);
  });

  it('refuses a second call, and a non-function, before any write', async () => {
    const { h, calls } = host('own');
    const tx = new AttemptTransaction(h);
    await expect(tx.run('not a function')).rejects.toThrow(/the argument must be a function of the manager/);
    await tx.run(async () => 1);
    await expect(tx.run(async () => 2)).rejects.toThrow(/was called a second time in one attempt/);
    expect(calls).toEqual(['progress', 'begin', 'success', 'commit']);
  });
});
