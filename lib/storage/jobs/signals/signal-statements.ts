import { TERMINAL_JOB_STATES } from '../../../model/index.js';
import { statement } from '../../sql/named-params.js';
import { notifySql } from '../../sql/notification-topics.js';
import { quoteIdent, sqlLiterals } from '../../sql/sql-identifiers.js';

/** The fence of the attempt that owns the job: only it consumes signals and publishes values. */
interface Fenced {
  jobId: string;
  attempt: number;
  workerId: string;
}

const FENCED = ['jobId', 'attempt', 'workerId'] as const;

/**
 * The SQL of signals into a job and values published out of it, for one
 * schema. What a handler does here is recorded as a step of the job in the
 * same statement, so a later attempt replays it instead of doing it again.
 */
export function signalStatements(schema: string) {
  const s = quoteIdent(schema);
  const ended = sqlLiterals(TERMINAL_JOB_STATES);
  const fence = (p: { jobId: string; attempt: string; workerId: string }) =>
    `id = ${p.jobId} AND attempt = ${p.attempt} AND worker_id = ${p.workerId} AND state = 'active'`;
  return {
    // The job row is updated whatever it holds, so its lock is taken until this commits: a park
    // written meanwhile waits and then reads awaits_signal as this left it (see the fail outcome).
    // A job parked on this name is made due and its queue woken.
    // The payload is stored sealed (`sealed`, given when JobsModule has keys) for an encrypted job,
    // one whose own payload is sealed, so a reencrypt of the job finds it; plain for any other.
    send: statement<{
      jobId: string;
      name: string;
      payload: string | null;
      sealed: string | null;
      now: Date;
      channel: string;
    }>()(
      ['jobId', 'name', 'payload', 'now', 'channel', 'sealed'],
      (p) => `WITH u AS (
      UPDATE ${s}.job
         SET run_at = CASE WHEN state = 'queued' AND awaits_signal = ${p.name}::text THEN least(run_at, ${p.now}::timestamptz) ELSE run_at END,
             awaits_signal = CASE WHEN awaits_signal = ${p.name}::text THEN NULL ELSE awaits_signal END
       WHERE id = ${p.jobId} AND state NOT IN (${ended})
      RETURNING id, queue, state, run_at, jsonb_typeof(payload) = 'string' AND left(payload #>> '{}', 6) = '$enc1:' AS encrypted
    ), ins AS (
      INSERT INTO ${s}.job_signal (job_id, name, payload, sent_at)
      SELECT id, ${p.name}, CASE WHEN u.encrypted AND ${p.sealed}::jsonb IS NOT NULL THEN ${p.sealed}::jsonb ELSE ${p.payload}::jsonb END,
             ${p.now}
        FROM u RETURNING id
    ), n AS (
      SELECT ${notifySql('queue', p.channel, 'u.queue')} FROM u WHERE u.state = 'queued' AND u.run_at <= ${p.now}::timestamptz
    )
    SELECT (SELECT id FROM ins) AS signal, (SELECT count(*) FROM n) AS woke`,
    ),

    stateOf: statement<{ jobId: string }>()(['jobId'], (p) => `SELECT state FROM ${s}.job WHERE id = ${p.jobId}`),

    // The wait begins: the job is flagged as waiting for `name` (a signal clears the flag) and the
    // wait's record, with its deadline, is written unless an earlier attempt wrote it.
    beginWait: statement<Fenced & { name: string; step: string; now: Date; deadline: Date }>()(
      [...FENCED, 'name', 'step', 'now', 'deadline'],
      (p) => `WITH u AS (
      UPDATE ${s}.job SET awaits_signal = ${p.name} WHERE ${fence(p)} RETURNING id, attempt
    ), rec AS (
      INSERT INTO ${s}.job_step (job_id, name, kind, attempt, result, completed_at, wake_at)
      SELECT id, ${p.step}, 'signal', attempt, NULL, ${p.now}, ${p.deadline} FROM u
      ON CONFLICT (job_id, name) DO NOTHING RETURNING job_id
    )
    SELECT (SELECT count(*) FROM u) AS fenced, (SELECT count(*) FROM rec) AS recorded`,
    ),

    // The oldest unconsumed signal of the name, consumed and recorded as the wait's result in one
    // statement: a record the fence refuses consumes nothing.
    consume: statement<Fenced & { name: string; step: string; now: Date }>()(
      [...FENCED, 'name', 'step', 'now'],
      (p) => `WITH j AS (
      SELECT id, attempt FROM ${s}.job WHERE ${fence(p)} FOR UPDATE
    ), sig AS (
      SELECT g.id, g.payload FROM ${s}.job_signal g JOIN j ON g.job_id = j.id
       WHERE g.name = ${p.name} AND g.consumed_at IS NULL ORDER BY g.id LIMIT 1 FOR UPDATE OF g
    ), used AS (
      UPDATE ${s}.job_signal t SET consumed_at = ${p.now} FROM sig WHERE t.id = sig.id RETURNING t.payload
    ), clear AS (
      UPDATE ${s}.job w SET awaits_signal = NULL FROM j, used WHERE w.id = j.id RETURNING w.id
    ), rec AS (
      UPDATE ${s}.job_step st SET result = jsonb_build_object('payload', used.payload), attempt = j.attempt, completed_at = ${p.now}
        FROM j, used WHERE st.job_id = j.id AND st.name = ${p.step}
      RETURNING st.result
    )
    SELECT (SELECT count(*) FROM j) AS fenced, (SELECT result FROM rec) AS result, (SELECT count(*) FROM clear) AS cleared`,
    ),

    // The wait ran out: its result is null, recorded, and the job waits for the name no more.
    timeOut: statement<Fenced & { step: string; now: Date }>()(
      [...FENCED, 'step', 'now'],
      (p) => `WITH u AS (
      UPDATE ${s}.job SET awaits_signal = NULL WHERE ${fence(p)} RETURNING id, attempt
    )
    UPDATE ${s}.job_step st SET result = jsonb_build_object('payload', NULL, 'timedOut', true), attempt = u.attempt, completed_at = ${p.now}
      FROM u WHERE st.job_id = u.id AND st.name = ${p.step}
    RETURNING st.job_id`,
    ),

    // A published value and the step that records it, in one statement; the value's readers are
    // told on the channel. An attempt that replays the step does not come here.
    setEvent: statement<Fenced & { key: string; step: string; value: string; now: Date; channel: string }>()(
      [...FENCED, 'key', 'step', 'value', 'now', 'channel'],
      (p) => `WITH j AS (
      SELECT id, attempt FROM ${s}.job WHERE ${fence(p)} FOR SHARE
    ), rec AS (
      INSERT INTO ${s}.job_step (job_id, name, kind, attempt, result, completed_at, wake_at)
      SELECT id, ${p.step}, 'step', attempt, NULL, ${p.now}, NULL FROM j
      ON CONFLICT (job_id, name) DO NOTHING RETURNING job_id
    ), ev AS (
      INSERT INTO ${s}.job_event_value (job_id, key, value, set_at)
      SELECT job_id, ${p.key}, ${p.value}::jsonb, ${p.now} FROM rec
      ON CONFLICT (job_id, key) DO UPDATE SET value = EXCLUDED.value, set_at = EXCLUDED.set_at
      RETURNING job_id
    ), n AS (
      SELECT ${notifySql('event', p.channel, 'job_id::text')} FROM ev
    )
    SELECT (SELECT count(*) FROM j) AS fenced, (SELECT count(*) FROM n) AS published`,
    ),

    // A child of ctx.invoke(), in the parent's step transaction: linked to the parent, and awaited so
    // that its end (the trigger of awaited_job_ended) wakes the parent; the parent is flagged as
    // waiting for it. The child is not visible to anyone until this commits, so it cannot have ended
    // before the flag: the parent parks without looking, and the park's write finds the flag cleared
    // if the child ended in between.
    linkChild: statement<Fenced & { childId: string }>()(
      [...FENCED, 'childId'],
      (p) => `WITH child AS (
      UPDATE ${s}.job SET invoked_by = ${p.jobId}, awaited = true WHERE id = ${p.childId} RETURNING id
    )
    UPDATE ${s}.job SET awaits_signal = 'child:' || ${p.childId}::text
     WHERE ${fence(p)} AND EXISTS (SELECT 1 FROM child)
    RETURNING id`,
    ),

    // The parent waits for its child again (a later attempt that found it not ended): the flag is set
    // before the look that follows it, so an end after the look finds it.
    awaitChild: statement<Fenced & { childId: string }>()(
      [...FENCED, 'childId'],
      (p) => `UPDATE ${s}.job SET awaits_signal = 'child:' || ${p.childId}::text WHERE ${fence(p)} RETURNING id`,
    ),

    // How the child stands; once it has ended, its parent waits for it no more (a flag left by an
    // attempt that stopped between its flag and its look is cleared here).
    childEnd: statement<Fenced & { childId: string }>()(
      [...FENCED, 'childId'],
      (p) => `WITH c AS (
      SELECT state, result, last_error FROM ${s}.job WHERE id = ${p.childId}
    ), u AS (
      UPDATE ${s}.job SET awaits_signal = NULL
       WHERE ${fence(p)} AND awaits_signal = 'child:' || ${p.childId}::text
         AND EXISTS (SELECT 1 FROM c WHERE state IN (${ended}))
      RETURNING id
    )
    SELECT state, result, last_error FROM c`,
    ),

    // A published value with the job's state, so a reader knows whether waiting can still help.
    getEvent: statement<{ jobId: string; key: string }>()(
      ['jobId', 'key'],
      (p) => `SELECT j.state, v.value, v.job_id IS NOT NULL AS found
       FROM ${s}.job j LEFT JOIN ${s}.job_event_value v ON v.job_id = j.id AND v.key = ${p.key}
      WHERE j.id = ${p.jobId}`,
    ),
  };
}

export type SignalStatements = ReturnType<typeof signalStatements>;
