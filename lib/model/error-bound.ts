import type { SerializedError } from './errors.js';
import { checkInteger, INT4_MAX } from './validation.js';

/** The default `maxErrorBytes`: the most UTF-8 bytes a stored error keeps of its message, and of its stack. */
export const DEFAULT_MAX_ERROR_BYTES = 8192;

/** The smallest `maxErrorBytes`: room for some text and the mark of the cut. */
const MIN_MAX_ERROR_BYTES = 256;

/**
 * JobsModule's `maxErrorBytes`, checked at boot: an integer of at least
 * MIN_MAX_ERROR_BYTES, so a cut error still says something.
 */
export function checkMaxErrorBytes(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_ERROR_BYTES;
  return checkInteger('JobsModule', 'maxErrorBytes', value, MIN_MAX_ERROR_BYTES, INT4_MAX, DEFAULT_MAX_ERROR_BYTES);
}

/**
 * A text of at most `maxBytes` UTF-8 bytes: as it is when it fits, else its
 * start and the mark `… [cut N bytes]`, where N counts the bytes left out.
 * The cut falls between characters, never inside one.
 */
export function boundText(text: string, maxBytes: number): string {
  // A UTF-16 unit is at most 3 UTF-8 bytes: most texts fit without being measured.
  if (text.length * 3 <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  // The mark's count is at most the whole length, so its longest form is reserved.
  const room = maxBytes - Buffer.byteLength(cutMark(bytes.length));
  let keep = Math.max(0, room);
  while (keep > 0 && (bytes[keep]! & 0xc0) === 0x80) keep--;
  return bytes.subarray(0, keep).toString('utf8') + cutMark(bytes.length - keep);
}

/** An error as storage keeps it: its name, message and stack each within `maxBytes`. */
export function boundError(error: SerializedError, maxBytes: number): SerializedError {
  const bounded: SerializedError = {
    ...error,
    name: boundText(error.name, maxBytes),
    message: boundText(error.message, maxBytes),
  };
  if (error.stack !== undefined) bounded.stack = boundText(error.stack, maxBytes);
  return bounded;
}

function cutMark(cut: number): string {
  return `… [cut ${cut} bytes]`;
}
