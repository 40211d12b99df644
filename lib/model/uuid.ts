import { randomUUID } from 'node:crypto';

/** Ids made for the same millisecond count up from a random start (RFC 9562, method 1). */
const COUNTER_MAX = 2 ** 26 - 1;
/** The start is in the lower half, so a millisecond has room for millions of ids before it wraps. */
const START_MASK = 2 ** 25 - 1;
let lastMs = -1;
let counter = 0;

/**
 * UUIDv7: time-ordered ids keep primary-key inserts at the right edge of the
 * B-tree, which matters at tens of thousands of inserts per second, and let
 * retention find old rows by key range. The random bits come from
 * `randomUUID()`, which draws from a cached entropy pool instead of asking
 * the OS for 16 bytes per id.
 *
 * Ids made in a row for one millisecond also follow the order they were
 * made in: a 26-bit counter (rand_a and the top of rand_b) goes up by one
 * each time. Claims order jobs due at the same instant by id, so jobs
 * enqueued one after another in that millisecond run in that order; under a
 * test's ManualClock every enqueue of a test falls in one millisecond.
 */
export function uuidv7(now: number = Date.now()): string {
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx
  if (now === lastMs && counter < COUNTER_MAX) {
    counter++;
  } else {
    lastMs = now;
    counter = parseInt(random.slice(0, 8), 16) & START_MASK;
  }
  const time = now.toString(16).padStart(12, '0');
  const high = (counter >>> 14).toString(16).padStart(3, '0');
  // The RFC variant (binary 10) in the top two bits, then the counter's low 14 bits.
  const low = (0x8000 | (counter & 0x3fff)).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${high}-${low}-${random.slice(24)}`;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A job or batch id's shape: anything else cannot name a row, so callers answer "not found" without a query. */
export function isUuid(id: unknown): id is string {
  return typeof id === 'string' && UUID_RE.test(id);
}
