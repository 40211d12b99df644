/**
 * claim_controlled's signature and its DECLAREd variables: the names every piece of its body
 * (claim-columns.ts, group-ring.ts, rate-fragments.ts, …) reads and writes, and
 * test/unit/claim-fragments.spec.ts checks their use against. Its body follows in
 * claim-controlled.routine.ts, from BEGIN.
 */
export const CLAIM_CONTROLLED_SIGNATURE = `CREATE FUNCTION :SCHEMA.:ROUTINE(
  p_queue text, p_names text[], p_limit int, p_now timestamptz, p_worker text, p_lease_ms float8, p_channel text,
  p_share boolean, p_ahead int)
RETURNS TABLE (id uuid, name text, queue text, payload jsonb, attempt int, max_attempts int, timeout_ms int,
               batch_id uuid, trace_context jsonb, deadline timestamptz, run_at timestamptz, wait_ms float8, reserved boolean,
               context jsonb)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
DECLARE
  v_q record;
  v_room int := p_limit;
  v_active int;
  -- The queue's concurrency limit: this worker's active jobs, the free slots, the most this claim
  -- may take of them, the other workers waiting for slots (LIMIT_SHARE), and this one's wait.
  v_mine int;
  v_free int;
  v_bound int;
  v_waiting int := 0;
  v_wants boolean;
  -- Jobs this worker holds claimed ahead, and how many more this claim takes (claimAhead).
  v_held_ahead int := 0;
  v_ahead int;
  v_until timestamptz;
  v_in_window int;
  v_oldest timestamptz;
  v_wait float8;
  v_groups text[] := '{}';
  v_per_group int;
  v_ids uuid[];
  v_chosen_groups text[];
  v_chosen_names text[];
  v_claimed int := 0;
  v_named boolean;
  v_counted boolean;
  v_walk int;
  v_group_limited boolean;
  v_full text[] := '{}';
  v_fresh text[] := '{}';
  v_last_arrival timestamptz;
  v_seen timestamptz;
  -- The keyed rate limits this queue's job names refer to, locked in key order.
  v_keys text[] := '{}';
  -- The time this claim counts rate windows at and stamps its starts with (RATE_TURN).
  v_turn timestamptz := p_now;`;
