import {
  JobsError,
  runningJobContext,
  sealContext,
  serializeContext,
  type JobCipher,
  type JobContextSource,
} from '../model/index.js';

/**
 * The context a new job is written with, as its row stores it: the call's own (`null` for none),
 * else the default (defaultContext), checked (serializeContext) and sealed for an encrypted job.
 */
export function storedContext(
  where: string,
  given: unknown,
  contextFrom: JobContextSource | undefined,
  cipher: JobCipher,
  encrypted: boolean,
): string | null {
  const json =
    given !== undefined
      ? serializeContext(where, given)
      : serializeContext(`${where} (the default context)`, defaultContext(where, contextFrom));
  return json == null ? null : sealContext(cipher, json, encrypted);
}

/**
 * A job's options with the call's default context (`fallback`, read once
 * for a call that writes several jobs) when they give none of their own.
 * Options that are not an object are left for JobFactory to refuse.
 */
export function withDefaultContext<O>(options: O, fallback: unknown): O {
  if (fallback === undefined || typeof options !== 'object' || options === null || Array.isArray(options)) {
    return options;
  }
  return (options as { context?: unknown }).context === undefined ? { ...options, context: fallback } : options;
}

/**
 * The context of a job whose call gives none: that of the job whose handler is running here (its
 * children carry on its tenant), else what JobsModule's `contextFrom` reads now; undefined for none.
 */
export function defaultContext(where: string, contextFrom: JobContextSource | undefined): unknown {
  const inherited = runningJobContext();
  if (inherited !== undefined) return inherited;
  if (!contextFrom) return undefined;
  try {
    return contextFrom();
  } catch (error) {
    throw new JobsError(
      `${where}: JobsModule's "contextFrom" threw (${(error as Error)?.message ?? String(error)}), so the job's context is unknown and nothing was written. ` +
        `Potential fix: make contextFrom return undefined where it has nothing to read (outside a request), or pass { context } to this call.`,
    );
  }
}
