import { randomUUID } from 'node:crypto';

/**
 * UUIDv7: time-ordered ids keep primary-key inserts at the right edge of the
 * B-tree, which matters at tens of thousands of inserts per second, and let
 * retention find old rows by key range. The random bits come from
 * `randomUUID()`, which draws from a cached entropy pool instead of asking
 * the OS for 16 bytes per id.
 */
export function uuidv7(now: number = Date.now()): string {
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V already the RFC variant
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A job or batch id's shape: anything else cannot name a row, so callers answer "not found" without a query. */
export function isUuid(id: unknown): id is string {
  return typeof id === 'string' && UUID_RE.test(id);
}
