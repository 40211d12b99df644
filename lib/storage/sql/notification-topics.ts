import { createHash } from 'node:crypto';

/**
 * What travels on a schema's NOTIFY channel. The payload is a topic prefix
 * and an argument; these prefixes are also written by the frozen SQL of
 * migration 0001 (release_children wakes the child's queue), so they never
 * change, and a unit test ties the two together.
 */
export type JobNotification =
  /** Work became due in a queue: idle workers serving it should claim. */
  | { topic: 'queue'; queue: string }
  /** Someone asked to cancel an active job: the worker running it aborts it. */
  | { topic: 'cancel'; jobId: string }
  /** The schedule table changed (one schedule, or null for several). */
  | { topic: 'schedules'; name: string | null }
  /** A queue's settings changed (limits, pause, groups or serial keys seen): re-read them. */
  | { topic: 'queues'; queue: string }
  /** A job someone waits for (`waitFor`) ended: waiters look it up. */
  | { topic: 'ended'; jobId: string }
  /** A job published a value (`ctx.setEvent`): readers waiting in `getEvent` look again. */
  | { topic: 'event'; jobId: string };

export type NotificationTopic = JobNotification['topic'];

export const TOPIC_PREFIXES: Readonly<Record<NotificationTopic, string>> = {
  queue: 'q:',
  cancel: 'c:',
  schedules: 's:',
  queues: 'k:',
  ended: 'e:',
  event: 'v:',
};

/** Decodes a payload; null for a topic this build does not know (a newer instance may send one). */
export function decodeNotification(payload: string): JobNotification | null {
  const arg = payload.slice(2);
  switch (payload.slice(0, 2)) {
    case TOPIC_PREFIXES.queue:
      return { topic: 'queue', queue: arg };
    case TOPIC_PREFIXES.cancel:
      return { topic: 'cancel', jobId: arg };
    case TOPIC_PREFIXES.schedules:
      return { topic: 'schedules', name: arg || null };
    case TOPIC_PREFIXES.queues:
      return { topic: 'queues', queue: arg };
    case TOPIC_PREFIXES.ended:
      return { topic: 'ended', jobId: arg };
    case TOPIC_PREFIXES.event:
      return { topic: 'event', jobId: arg };
    default:
      return null;
  }
}

/**
 * `pg_notify(...)` for a statement: `channel` and `arg` are SQL expressions
 * (a parameter such as `$4`, a column). Every statement that announces work
 * builds its call here, so a topic is spelled once.
 */
export function notifySql(topic: NotificationTopic, channel: string, arg: string): string {
  return `pg_notify(${channel}, '${TOPIC_PREFIXES[topic]}' || ${arg})`;
}

/** PostgreSQL truncates identifiers, channel names included, past 63 bytes. */
const MAX_CHANNEL_BYTES = 63;

/**
 * The schema's channel. A long schema name would push the plain name past
 * PostgreSQL's limit (LISTEN then fails at boot), so such names get a short
 * digest instead; every instance derives the same one.
 */
export function notificationChannel(schema: string): string {
  const plain = `durable_jobs:${schema}`;
  if (Buffer.byteLength(plain, 'utf8') <= MAX_CHANNEL_BYTES) return plain;
  return `durable_jobs:${createHash('sha1').update(schema).digest('hex').slice(0, 24)}`;
}
