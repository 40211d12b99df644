// @ts-check
/**
 * The JSON client: every request goes to the dashboard's own `<path>/api`,
 * read from the page's `dashboard-base` meta tag (the path the page was
 * served at, a global prefix included).
 */

const baseMeta = document.querySelector('meta[name="dashboard-base"]');
/** The path the page was served at, without a trailing slash. */
export const BASE = baseMeta?.getAttribute('content') ?? '';
const API = BASE + '/api';

/** Job states, in the order the page lists them. */
export const STATES = ['waiting', 'queued', 'scheduled', 'active', 'succeeded', 'failed', 'cancelled', 'skipped'];

/** A refused or failed request: the server's message, fix included, and the HTTP status. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * A JSON request to the dashboard's API. The answers' shapes are the
 * controllers' (lib/dashboard/controllers), so the page reads them as `any`.
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<any>}
 */
export async function api(path, init) {
  const res = await fetch(API + path, Object.assign({ headers: { accept: 'application/json' } }, init));
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    const message = Array.isArray(body.message) ? body.message.join('; ') : body.message;
    throw new ApiError(res.status, message || res.status + ' ' + res.statusText);
  }
  return res.status === 204 ? null : res.json();
}

/**
 * An action: a POST, with a JSON body when there is one.
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
export function post(path, body) {
  return api(
    path,
    body === undefined
      ? { method: 'POST' }
      : {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify(body),
        },
  );
}

/** What a caught value says: an Error's message, or the value as text. */
export function messageOf(/** @type {unknown} */ error) {
  return error instanceof Error ? error.message : String(error);
}
