/**
 * The primary's WAL position, as text (`lsn`): where it has inserted, so
 * commits not flushed yet count too. A primary that is itself a standby (a
 * cascade) answers with what it has replayed.
 */
export const PRIMARY_WAL_POSITION = `SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text AS lsn`;
