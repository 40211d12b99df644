import { statement } from '../sql/named-params.js';
import { quoteIdent } from '../sql/sql-identifiers.js';

/**
 * The SQL of services, their builds and instances, for one schema. A build is what one
 * deployable's code declares (its fingerprint); its owner row says which build's declarations
 * are in force.
 */
export function serviceStatements(schema: string) {
  const s = quoteIdent(schema);
  return {
    /** The build's first sighting is kept. */
    recordBuild: statement<{ service: string; build: string; now: Date }>()(
      ['service', 'build', 'now'],
      (p) => `INSERT INTO ${s}.service_build (service, build, first_seen_at) VALUES (${p.service}, ${p.build}, ${p.now})
      ON CONFLICT (service, build) DO NOTHING`,
    ),

    /** This instance is alive. */
    beat: statement<{ instanceId: string; service: string; build: string; now: Date }>()(
      ['instanceId', 'service', 'build', 'now'],
      (
        p,
      ) => `INSERT INTO ${s}.service_instance (id, service, build, started_at, last_seen_at) VALUES (${p.instanceId}, ${p.service}, ${p.build}, ${p.now}, ${p.now})
      ON CONFLICT (id) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at, stopped_at = NULL`,
    ),

    /** The first build of a service owns its declarations from the start. */
    ensureOwner: statement<{ service: string; build: string; now: Date }>()(
      ['service', 'build', 'now'],
      (p) => `INSERT INTO ${s}.service_owner (service, build, since) VALUES (${p.service}, ${p.build}, ${p.now})
      ON CONFLICT (service) DO NOTHING`,
    ),

    /**
     * The build in force, locked until the transaction ends, and what decides whether `build` takes
     * over: whether that build was first seen before `build`, and whether any of its instances beat
     * since `aliveSince`.
     */
    ownerForUpdate: statement<{ service: string; build: string; aliveSince: Date }>()(
      ['service', 'build', 'aliveSince'],
      (p) => `SELECT o.build,
             (SELECT b.first_seen_at FROM ${s}.service_build b WHERE b.service = o.service AND b.build = o.build)
               < (SELECT b.first_seen_at FROM ${s}.service_build b WHERE b.service = o.service AND b.build = ${p.build})
               AS owner_older,
             EXISTS (SELECT 1 FROM ${s}.service_instance i
                      WHERE i.service = o.service AND i.build = o.build AND i.stopped_at IS NULL
                        AND i.last_seen_at >= ${p.aliveSince}) AS alive
        FROM ${s}.service_owner o WHERE o.service = ${p.service}
         FOR UPDATE`,
    ),

    takeOver: statement<{ service: string; build: string; now: Date }>()(
      ['service', 'build', 'now'],
      (p) => `UPDATE ${s}.service_owner SET build = ${p.build}, since = ${p.now} WHERE service = ${p.service}`,
    ),

    /**
     * Held while a build writes its declarations: a take-over waits for the write to end, and a
     * build that lost the ownership meanwhile writes nothing.
     */
    fence: statement<{ service: string; build: string }>()(
      ['service', 'build'],
      (p) => `SELECT 1 FROM ${s}.service_owner WHERE service = ${p.service} AND build = ${p.build} FOR SHARE`,
    ),

    stop: statement<{ instanceId: string; now: Date }>()(
      ['instanceId', 'now'],
      (p) => `UPDATE ${s}.service_instance SET stopped_at = ${p.now} WHERE id = ${p.instanceId}`,
    ),

    /** Instances stopped or silent before `before`: nothing decides by them any more. */
    pruneInstances: statement<{ before: Date }>()(
      ['before'],
      (p) => `DELETE FROM ${s}.service_instance WHERE coalesce(stopped_at, last_seen_at) < ${p.before}`,
    ),

    list: statement<{ aliveSince: Date }>()(
      ['aliveSince'],
      (p) => `SELECT o.service, o.build AS owner_build, o.since,
             coalesce((SELECT jsonb_agg(jsonb_build_object('build', b.build, 'first_seen_at', b.first_seen_at,
                         'instances', (SELECT count(*) FROM ${s}.service_instance i
                                        WHERE i.service = b.service AND i.build = b.build AND i.stopped_at IS NULL
                                          AND i.last_seen_at >= ${p.aliveSince}))
                         ORDER BY b.first_seen_at DESC)
                         FROM ${s}.service_build b WHERE b.service = o.service), '[]') AS builds,
             (SELECT count(*)::int FROM ${s}.recurring_schedule r WHERE r.source = 'code' AND r.service = o.service)
               AS schedules,
             ((SELECT count(*) FROM ${s}.job_queue q WHERE q.code_service = o.service)
               + (SELECT count(*) FROM ${s}.job_name_limit l WHERE l.code_service = o.service)
               + (SELECT count(*) FROM ${s}.job_rate_limit k WHERE k.code_service = o.service))::int AS limits
        FROM ${s}.service_owner o ORDER BY o.service`,
    ),

    /**
     * Releases what a retired or renamed service declared: its schedules and limits lose
     * their owner (the next service that starts and declares them takes them; one that declares
     * nothing of them removes them), and its records go.
     */
    forget: statement<{ service: string }>()(
      ['service'],
      (p) => `WITH r AS (
      UPDATE ${s}.recurring_schedule SET service = NULL WHERE service = ${p.service} RETURNING 1
    ), q AS (
      UPDATE ${s}.job_queue SET code_service = NULL WHERE code_service = ${p.service} RETURNING 1
    ), l AS (
      UPDATE ${s}.job_name_limit SET code_service = NULL WHERE code_service = ${p.service} RETURNING 1
    ), k AS (
      UPDATE ${s}.job_rate_limit SET code_service = NULL WHERE code_service = ${p.service} RETURNING 1
    ), o AS (
      DELETE FROM ${s}.service_owner WHERE service = ${p.service} RETURNING 1
    ), b AS (
      DELETE FROM ${s}.service_build WHERE service = ${p.service} RETURNING 1
    ), i AS (
      DELETE FROM ${s}.service_instance WHERE service = ${p.service} RETURNING 1
    )
    SELECT (SELECT count(*) FROM o)::int AS known,
           (SELECT count(*) FROM r)::int AS schedules,
           ((SELECT count(*) FROM q) + (SELECT count(*) FROM l) + (SELECT count(*) FROM k))::int AS limits,
           (SELECT count(*) FROM b)::int AS builds, (SELECT count(*) FROM i)::int AS instances`,
    ),
  };
}

export type ServiceStatements = ReturnType<typeof serviceStatements>;
