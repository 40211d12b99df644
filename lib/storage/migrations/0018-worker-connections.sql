-- Version 18: how many connections each worker's instance holds open and may open at most (its
-- maxConnections), written with its heartbeat, for operators (JobsMonitor.workers(), the dashboard).
ALTER TABLE :SCHEMA.worker ADD COLUMN IF NOT EXISTS connections_open int;
ALTER TABLE :SCHEMA.worker ADD COLUMN IF NOT EXISTS connections_max int;
