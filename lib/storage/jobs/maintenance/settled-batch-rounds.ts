import { statement } from '../../sql/named-params.js';
import { LIVE_JOB_STATES, type BatchState } from '../../../model/index.js';
import { quoteIdent, sqlLiterals } from '../../sql/sql-identifiers.js';
import type { SqlExecutor } from '../../sql/sql-executor.js';
import { FIRST_UUID, uuidv7Floor } from '../job-encoding.js';
import { noLiveChildren, noPendingHook } from '../job-fragments.js';
import { bulkDeleteTransaction } from './bulk-delete-transaction.js';

/** Batches looked at per round; the member bound usually stops it sooner. */
const BATCH_CANDIDATES = 100;

/** A settled batch's final state: the ones a round deletes. */
export type SettledBatchState = Exclude<BatchState, 'executing'>;

/** What one round deleted, and where the next one starts. */
export interface BatchRoundResult {
  batches: number;
  /** The member jobs that went with them. */
  members: number;
  /** The largest batch id looked at; the next round starts after it. Null when none was left. */
  last: string | null;
}

/**
 * Deleting settled batches, shared by retention and `JobsAdmin.purge()`. A
 * batch goes whole, its members with it (the foreign key cascades, and their
 * own rows go with them through the trigger of job_deleted), so a
 * round is sized by member rows rather than by batches: a thousand batches
 * of ten thousand members each would otherwise be one transaction of ten
 * million deleted rows.
 */
export function settledBatchStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    // Settled batches by key after `after`, as many as fit in `maxMembers` member rows (at
    // least one); the rest of the `limit` locked are let go at commit.
    candidates: statement<{
      state: SettledBatchState;
      beforeId: string;
      before: Date;
      limit: number;
      maxMembers: number;
      after: string;
    }>()(
      ['state', 'beforeId', 'before', 'limit', 'maxMembers', 'after'],
      (p) => `WITH c AS (
      SELECT id, total FROM ${s}.job_batch
       WHERE state = ${p.state} AND id < ${p.beforeId}::uuid AND id > ${p.after}::uuid AND completed_at < ${p.before}
       ORDER BY id LIMIT ${p.limit} FOR UPDATE SKIP LOCKED
    ), sized AS (
      SELECT id, sum(total) OVER (ORDER BY id) - total AS before_it FROM c
    )
    SELECT id FROM sized WHERE before_it < ${p.maxMembers} OR before_it = 0 ORDER BY id`,
    ),

    // A second statement, after the candidates are locked: its fresh snapshot
    // sees every edge made to them before. A batch stays while a live job
    // waits on it or on one of its members, or a member's onFailure hook waits.
    delete: statement<{ ids: readonly string[] }>()(
      ['ids'],
      (p) => `WITH d AS (
      DELETE FROM ${s}.job_batch b
       WHERE b.id = ANY(${p.ids}::uuid[]) AND b.state <> 'executing'
         AND NOT EXISTS (
               SELECT 1 FROM ${s}.job_dependency d JOIN ${s}.job c ON c.id = d.child_id
                WHERE d.parent_batch_id = b.id AND c.state IN (${sqlLiterals(LIVE_JOB_STATES)}))
         AND NOT EXISTS (
               SELECT 1 FROM ${s}.job m
                WHERE m.batch_id = b.id AND (NOT ${noLiveChildren(s, 'm')} OR NOT ${noPendingHook('m')}))
      RETURNING b.total
    )
    SELECT count(*)::int AS batches, coalesce(sum(total), 0)::int AS members FROM d`,
    ),
  };
}

export type SettledBatchStatements = ReturnType<typeof settledBatchStatements>;

/**
 * One round in one short transaction (without JIT, see bulkDeleteTransaction): the settled batches of `state` that
 * completed before `before`, after the batch id `after`, as many as fit in
 * about `maxMembers` member rows (at least one); batches locked elsewhere are
 * passed over.
 */
export function deleteSettledBatchRound(
  executor: Pick<SqlExecutor, 'transaction'>,
  sql: SettledBatchStatements,
  round: { state: SettledBatchState; before: Date; after: string | null; maxMembers: number },
): Promise<BatchRoundResult> {
  return bulkDeleteTransaction(executor, async (tx) => {
    const locked = await sql.candidates.run<{ id: string }>(tx, {
      state: round.state,
      beforeId: uuidv7Floor(round.before),
      before: round.before,
      limit: BATCH_CANDIDATES,
      maxMembers: round.maxMembers,
      after: round.after ?? FIRST_UUID,
    });
    if (locked.length === 0) return { batches: 0, members: 0, last: null };
    const ids = locked.map((r) => r.id);
    const [row] = await sql.delete.run<{ batches: number; members: number }>(tx, { ids });
    return { batches: row!.batches, members: row!.members, last: ids[ids.length - 1]! };
  });
}
