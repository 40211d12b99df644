import { databaseCall, JobsError, type JobCipher, type ReencryptResult } from '../model/index.js';
import type { AdminStorage } from '../storage/admin/admin-storage.interface.js';

/**
 * `JobsAdmin.reencrypt()`: the schedules' payloads, then the jobs in rounds
 * of `chunk` rows, each its own short transaction, until a round comes back
 * short. Rows locked during a round are passed over, so a caller runs it
 * again until `values` is 0.
 */
export async function reencryptAll(storage: AdminStorage, cipher: JobCipher, chunk: number): Promise<ReencryptResult> {
  const where = 'JobsAdmin.reencrypt()';
  const current = cipher.current;
  if (current === null) {
    throw new JobsError(
      `${where}: JobsModule has no "encryption" keys, so there is no current key to re-seal with. ` +
        `Potential fix: JobsModule.forRoot({ encryption: { keys: { new: newKey, old: oldKey }, current: 'new' } }).`,
    );
  }
  const schedules = await databaseCall(where, () => storage.reencryptSchedules());
  const result: ReencryptResult = { current, jobs: 0, rounds: 1, ...schedules };
  let after: string | null = null;
  do {
    const round = await databaseCall(where, () => storage.reencryptChunk(after, chunk));
    result.rounds++;
    result.jobs += round.jobs;
    result.values += round.values;
    result.unreadable += round.unreadable;
    after = round.jobs < chunk ? null : round.last;
  } while (after !== null);
  return result;
}
