// @ts-check
/** Text for values: counts, times, durations, ids, JSON. */

/** For path segments and query values. */
export const enc = encodeURIComponent;

/** A count, grouped by thousands; a missing one is 0. */
export const num = (/** @type {number | null | undefined} */ n) => Number(n || 0).toLocaleString('en-US');

/**
 * A time: the clock time if it is today, the date and time otherwise.
 * @param {string | null | undefined} iso
 */
export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

/**
 * How far a time is from now: "in 5 s", "3 min 2 s ago", "now".
 * @param {string | null | undefined} iso
 */
export function ago(iso) {
  if (!iso) return '';
  const ms = new Date(iso).getTime() - Date.now();
  const abs = Math.abs(ms);
  const text = abs < 1000 ? 'now' : duration(abs);
  return text === 'now' ? text : ms > 0 ? 'in ' + text : text + ' ago';
}

/**
 * A duration in the two largest units that matter.
 * @param {number | null | undefined} ms
 */
export function duration(ms) {
  if (ms === null || ms === undefined || isNaN(ms)) return '';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
  if (ms < 3600000) return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
  if (ms < 86400000) return Math.floor(ms / 3600000) + ' h ' + Math.round((ms % 3600000) / 60000) + ' min';
  return Math.floor(ms / 86400000) + ' d ' + Math.round((ms % 86400000) / 3600000) + ' h';
}

/**
 * The time from one ISO time to another.
 * @param {string} from
 * @param {string} to
 */
export const between = (from, to) => duration(new Date(to).getTime() - new Date(from).getTime());

/**
 * A value as indented JSON; what JSON cannot hold, as text.
 * @param {unknown} value
 */
export function json(value) {
  if (value === undefined) return 'undefined';
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** An id cut to its start and end. */
export const shortId = (/** @type {string} */ id) => id.slice(0, 8) + '…' + id.slice(-4);

/**
 * Text cut to n characters, an ellipsis last.
 * @param {string} text
 * @param {number} n
 */
export const clip = (text, n) => (text.length > n ? text.slice(0, n - 1) + '…' : text);
