import { randomUUID } from 'node:crypto';

/** The last `now` asked for, the timestamp its ids carry, and the counter within it (rand_a, 12 bits). */
let lastNow = -1;
let stamp = -1;
let counter = 0;

/**
 * UUIDv7: time-ordered ids keep primary-key inserts at the right edge of the
 * B-tree, which matters at tens of thousands of inserts per second, and let
 * retention find old rows by key range. Within a millisecond the 12 bits
 * after the version count up (RFC 9562's "fixed bit-length dedicated
 * counter"), so the ids of one process sort in the order they were made: a
 * bulk enqueue keeps its order, which serial keys and FIFO claims rely on.
 * Past 4,096 for one `now` the timestamp moves on by one. The other
 * random bits come from `randomUUID()`, which draws from a cached entropy
 * pool instead of asking the OS for 16 bytes per id.
 */
export function uuidv7(now: number = Date.now()): string {
  // Another `now` starts afresh, backwards too: a test's ManualClock must get ids of its own time.
  if (now !== lastNow) {
    lastNow = stamp = now;
    counter = 0;
  } else if (++counter > 0xfff) {
    stamp++;
    counter = 0;
  }
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V already the RFC variant
  const time = stamp.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${counter.toString(16).padStart(3, '0')}${random.slice(18)}`;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A job or batch id's shape: anything else cannot name a row, so callers answer "not found" without a query. */
export function isUuid(id: unknown): id is string {
  return typeof id === 'string' && UUID_RE.test(id);
}
