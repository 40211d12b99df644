import type { ReplicaLag } from '../../model/index.js';
import type { PoolExecutor } from '../sql/sql-executor.js';
import { PRIMARY_WAL_POSITION } from '../sql/wal-position.js';

// $1 the primary's position, read first: the replica may have replayed past it since, hence greatest(…, 0).
const REPLICA_POSITION = `SELECT pg_is_in_recovery() AS standby,
       CASE WHEN pg_is_in_recovery() THEN greatest(pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn()), 0)::float8 END AS bytes,
       CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END AS paused,
       pg_last_xact_replay_timestamp() AS replayed_at,
       clock_timestamp() AS now`;

interface PositionRow {
  standby: boolean;
  bytes: number | null;
  paused: boolean;
  replayed_at: Date | null;
  now: Date;
}

/**
 * Measures how far the replica is behind: the WAL bytes it has yet to
 * replay, from the primary's position and its own, and the time that
 * stands for.
 */
export async function measureReplicaLag(primary: PoolExecutor, replica: PoolExecutor): Promise<ReplicaLag> {
  const [{ lsn }] = (await primary.query<{ lsn: string }>(PRIMARY_WAL_POSITION)) as [{ lsn: string }];
  const [row] = (await replica.query<PositionRow>(REPLICA_POSITION, [lsn])) as [PositionRow];
  const bytes = row.bytes === null ? null : Number(row.bytes);
  let ms: number | null = null;
  if (row.standby && bytes === 0) ms = 0;
  else if (row.standby && row.replayed_at) ms = Math.max(0, row.now.getTime() - row.replayed_at.getTime());
  return { standby: row.standby, bytes, ms, replayPaused: row.paused, measuredAt: row.now };
}
