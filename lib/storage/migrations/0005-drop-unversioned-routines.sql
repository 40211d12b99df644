-- breaking: drops settle_jobs, release_children and reopen_job, which release 0.1.0 calls
-- Version 5: the functions under their plain names, which version 1 (and unreleased builds'
-- claim_controlled) created. This build calls its own routines, installed under names that carry
-- a hash of their text (lib/storage/routines), so nothing of its calls these; a 0.1.0 worker does,
-- so this version waits until none is alive. Version 4 is kept apart from it for that reason: a
-- build runs without this version, not without version 4's tables.

DROP FUNCTION IF EXISTS :SCHEMA.claim_controlled(text, text[], int, timestamptz, text, float8);

DROP FUNCTION IF EXISTS :SCHEMA.settle_jobs(uuid[], text[], timestamptz, text);

DROP FUNCTION IF EXISTS :SCHEMA.release_children(uuid[], timestamptz, text);

DROP FUNCTION IF EXISTS :SCHEMA.reopen_job(uuid, text);
