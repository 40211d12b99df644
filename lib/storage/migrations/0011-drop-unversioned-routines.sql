-- breaking: drops claim_controlled, settle_jobs, release_children and reopen_job, which builds before version 10 call
-- Version 11: the functions versions 1-8 created under their plain names. Builds from version 10
-- on call their own routines, installed at start under names that carry a hash of their text
-- (lib/storage/routines), so nothing of theirs calls these.

DROP FUNCTION IF EXISTS :SCHEMA.claim_controlled(text, text[], int, timestamptz, text, float8);

DROP FUNCTION IF EXISTS :SCHEMA.settle_jobs(uuid[], text[], timestamptz, text);

DROP FUNCTION IF EXISTS :SCHEMA.release_children(uuid[], timestamptz, text);

DROP FUNCTION IF EXISTS :SCHEMA.reopen_job(uuid, text);
