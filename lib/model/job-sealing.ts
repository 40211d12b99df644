import { EncryptedValueError, JobsError, type SerializedError } from './errors.js';
import { isSealed, sealedKeyId, type JobCipher } from './job-cipher.js';
import type { ClaimedJob } from './records.js';

/**
 * Every sealing and opening of a job's values, in one place: a new job's
 * payload and context on their way in (the queue layer), an attempt's
 * result, step results and errors on their way in, and a claimed job's
 * values on their way out (storage).
 */

/**
 * A new job's payload as stored: sealed for an encrypted job (or when every job is), refused when
 * the job is declared encrypted and JobsModule has no keys, so it is never stored in plain text.
 */
export function sealPayload(cipher: JobCipher, name: string, json: string, encrypted: boolean): string {
  if (!encrypted && !cipher.all) return json;
  if (!cipher.enabled) {
    throw new JobsError(
      `enqueue('${name}'): the job is declared { encrypted: true }, but JobsModule has no "encryption" keys, so its payload would be stored in plain text. ` +
        `Potential fix: JobsModule.forRoot({ encryption: { keys: { '2026-12': process.env.JOBS_KEY }, current: '2026-12' } }).`,
    );
  }
  return cipher.sealJson(json);
}

/** A new job's context as stored: sealed as its payload is (an encrypted job without keys was refused with its payload). */
export function sealContext(cipher: JobCipher, json: string, encrypted: boolean): string {
  return encrypted || cipher.all ? cipher.sealJson(json) : json;
}

/**
 * Claimed jobs as a worker takes them: a sealed payload (and context) opened, and the job
 * marked `encrypted`, so what its attempt writes is sealed too. A payload or context
 * this process cannot open leaves the job `unreadable` (the worker gives it
 * back, or fails it when the value does not authenticate); the payload is
 * then its placeholder, never the sealed text, and the context is null.
 */
export function openClaimed<T extends ClaimedJob & { error?: SerializedError }>(cipher: JobCipher, jobs: T[]): T[] {
  for (const job of jobs) {
    if (job.error) job.error = cipher.revealError(job.error);
    if (isSealed(job.context)) openContext(cipher, job);
    if (!isSealed(job.payload)) continue;
    job.encrypted = true;
    try {
      job.payload = cipher.openValue(job.payload, `The payload of job "${job.name}" (${job.id})`);
    } catch (error) {
      const keyId = sealedKeyId(job.payload) ?? '?';
      job.unreadable = { keyId, missing: !(error instanceof EncryptedValueError) };
      job.payload = cipher.revealValue(job.payload);
    }
  }
  return jobs;
}

function openContext(cipher: JobCipher, job: ClaimedJob): void {
  const sealed = job.context as unknown as string;
  job.encrypted = true;
  try {
    job.context = cipher.openValue(sealed, `The context of job "${job.name}" (${job.id})`) as Record<string, unknown>;
  } catch (error) {
    job.unreadable = { keyId: sealedKeyId(sealed) ?? '?', missing: !(error instanceof EncryptedValueError) };
    job.context = null;
  }
}

/** An attempt's value (result, step result) as stored: its JSON sealed when its job is encrypted. */
export function sealJsonFor(cipher: JobCipher, job: { encrypted?: boolean }, json: string | null): string | null {
  return job.encrypted && json !== null ? cipher.sealJson(json) : json;
}

/** An attempt's value as an object is stored (the outcome writes' JSON maps): sealed when its job is encrypted. */
export function sealValueFor(cipher: JobCipher, job: { encrypted?: boolean }, value: unknown): unknown {
  return job.encrypted ? cipher.sealText(JSON.stringify(value)) : value;
}

/** An attempt's error as stored: message and stack sealed when its job is encrypted. */
export function sealErrorFor(cipher: JobCipher, job: { encrypted?: boolean }, error: SerializedError): SerializedError {
  return job.encrypted ? cipher.sealError(error) : error;
}

/**
 * A signal's payload sealed, when JobsModule has keys: the sender knows the job only by its id, so
 * storage stores this for an encrypted job and the plain JSON for any other.
 */
export function sealSignalPayload(cipher: JobCipher, json: string | null): string | null {
  return json !== null && cipher.enabled ? cipher.sealJson(json) : json;
}
