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
