import { PermanentJobError } from '../model/index.js';

/**
 * A job's or a step's result as the JSON it is stored as, within
 * `maxBytes`. A result that cannot be stored fails the attempt for good:
 * another attempt would do the same work and fail the same way.
 */
export function resultJson(what: string, value: unknown, maxBytes: number, fix: string): string {
  let json: string | undefined;
  try {
    json = value === undefined ? 'null' : JSON.stringify(value);
  } catch (error) {
    throw new PermanentJobError(
      `${what} returned a result that is not JSON-serialisable (${(error as Error).message}). Potential fix: return plain data.`,
    );
  }
  // A function or a symbol: JSON has nothing for it.
  if (json === undefined) return 'null';
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) {
    throw new PermanentJobError(
      `${what} returned ${bytes} bytes of JSON, over maxResultBytes (${maxBytes}). Potential fix: ${fix}, or raise JobsModule's "maxResultBytes".`,
    );
  }
  return json;
}
