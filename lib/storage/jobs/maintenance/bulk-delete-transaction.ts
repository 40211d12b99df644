import { fixedStatement } from '../../sql/named-params.js';
import type { SqlExecutor } from '../../sql/sql-executor.js';

/** Planning without JIT compilation, for the rest of the transaction only. */
const WITHOUT_JIT = fixedStatement('SET LOCAL jit = off');

/**
 * Runs one chunk of a bulk delete (retention, `JobsAdmin.purge()`) in a
 * transaction of its own that plans without JIT. The chunks' statements read
 * a range of the primary key with a filter and a LIMIT; with a long history
 * kept the planner costs them past PostgreSQL's `jit_above_cost` (and, from
 * about 500 rows a chunk, past `jit_optimize_above_cost` and
 * `jit_inline_above_cost`) at its defaults, and a server built with LLVM
 * then compiled each chunk for 100 to 150 ms of CPU, more than the deletes
 * took: a pass ran at a fifth to a quarter of its speed without JIT, and
 * slowed a worker draining beside it for four times as long
 * (bench/RESULTS.md, 2026-12-07, evening).
 */
export function bulkDeleteTransaction<T>(
  executor: Pick<SqlExecutor, 'transaction'>,
  fn: (tx: SqlExecutor) => Promise<T>,
): Promise<T> {
  return executor.transaction(async (tx) => {
    await WITHOUT_JIT.run(tx, {});
    return fn(tx);
  });
}
