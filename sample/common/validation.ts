/**
 * Shared by the DTOs: the limits the library itself puts on names, so a bad
 * value is refused by the request's own check, with the field's name, before
 * any call reaches the library or the database.
 */

/** The library's limit for job, queue, batch and schedule names. */
export const MAX_NAME_LENGTH = 200;

/** PostgreSQL's int4, the type of the sample's integer columns and ids. */
export const INT4_MAX = 2_147_483_647;

/**
 * Something visible, and no control character (PostgreSQL text refuses NUL)
 * or lone UTF-16 surrogate: names end up in logs, notifications and the dashboard.
 */
export const PRINTABLE = /^(?!\s*$)[^\p{Cc}\p{Cs}]+$/u;
