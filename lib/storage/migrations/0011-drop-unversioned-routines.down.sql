-- Undoes version 11 (TypeORM migrations' down), so an older build runs again: the functions come
-- back exactly as released, each taken from its frozen file when the migrations load.

-- restore: 0001-initial.sql release_children

-- restore: 0001-initial.sql settle_jobs

-- restore: 0001-initial.sql reopen_job

-- restore: 0008-claim-in-lock-order.sql claim_controlled
