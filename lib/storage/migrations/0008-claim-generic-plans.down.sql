-- Back to version 7: the claim's statements planned as PostgreSQL chooses.
ALTER FUNCTION :SCHEMA.claim_controlled(text, text[], int, timestamptz, text, float8) RESET plan_cache_mode;
