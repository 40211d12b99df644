-- Version 8: the controlled claim plans its statements once per connection. PostgreSQL re-plans a
-- PL/pgSQL statement on every call while its generic plan looks dearer than the custom ones, and
-- the claim's statements (a lateral per group, windows, a parameter as LIMIT) always look dearer
-- generic, so every claim paid for planning them afresh. In pgbench a grouped claim of 20 jobs took
-- 1.65 ms planned each time and 1.1 ms with the generic plans, one of 80 2.35 against 1.8 ms; the
-- generic plans use the same indexes. Limited to this function: nothing else changes plan.
ALTER FUNCTION :SCHEMA.claim_controlled(text, text[], int, timestamptz, text, float8)
  SET plan_cache_mode = force_generic_plan;
