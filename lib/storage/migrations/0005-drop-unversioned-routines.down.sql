-- Undoes version 5 (TypeORM migrations' down), so release 0.1.0 runs again: its functions come back
-- exactly as released, each taken from its frozen file when the migrations load.

-- restore: 0001-initial.sql release_children

-- restore: 0001-initial.sql settle_jobs

-- restore: 0001-initial.sql reopen_job
