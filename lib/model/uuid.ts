import { randomFillSync } from 'node:crypto';

/** The last `now` asked for, the timestamp its ids carry, and the counter within it (rand_a, 12 bits). */
let lastNow = -1;
let stamp = -1;
let counter = 0;
/** `tttttttt-tttt-7` for `stamp`, built once per millisecond rather than per id. */
let prefix = '';

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const NIBBLE = '0123456789abcdef';
/** Random bytes for 512 ids (8 each), drawn from the OS at once rather than 16 bytes per id. */
const POOL_BYTES = 8 * 512;
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;

/**
 * UUIDv7: time-ordered ids keep primary-key inserts at the right edge of the
 * B-tree, which matters at tens of thousands of inserts per second, and let
 * retention find old rows by key range. Within a millisecond the 12 bits
 * after the version count up (RFC 9562's "fixed bit-length dedicated
 * counter"), so the ids of one process sort in the order they were made: a
 * bulk enqueue keeps its order, which serial keys and FIFO claims rely on.
 * Past 4,096 for one `now` the timestamp moves on by one. The other 62 bits
 * are random. Built from a table of hex pairs: formatting each id anew
 * (toString, padStart, slices of a randomUUID()) cost 0.6 µs an id against
 * 0.1 µs, 12 ms of a 20k-job enqueueMany.
 */
export function uuidv7(now: number = Date.now()): string {
  // Another `now` starts afresh, backwards too: a test's ManualClock must get ids of its own time.
  if (now !== lastNow) {
    lastNow = stamp = now;
    counter = 0;
    prefix = '';
  } else if (++counter > 0xfff) {
    stamp++;
    counter = 0;
    prefix = '';
  }
  if (!prefix) {
    const time = stamp.toString(16).padStart(12, '0');
    prefix = `${time.slice(0, 8)}-${time.slice(8, 12)}-7`;
  }
  if (poolAt === POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const b = pool;
  const i = poolAt;
  poolAt += 8;
  // The first random byte carries the RFC variant (10xx) in its top bits.
  return (
    prefix +
    NIBBLE[counter >> 8]! +
    HEX[counter & 0xff]! +
    '-' +
    HEX[(b[i]! & 0x3f) | 0x80]! +
    HEX[b[i + 1]!]! +
    '-' +
    HEX[b[i + 2]!]! +
    HEX[b[i + 3]!]! +
    HEX[b[i + 4]!]! +
    HEX[b[i + 5]!]! +
    HEX[b[i + 6]!]! +
    HEX[b[i + 7]!]!
  );
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A job or batch id's shape: anything else cannot name a row, so callers answer "not found" without a query. */
export function isUuid(id: unknown): id is string {
  return typeof id === 'string' && UUID_RE.test(id);
}
