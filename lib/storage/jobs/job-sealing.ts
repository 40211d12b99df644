import {
  EncryptedValueError,
  isSealed,
  sealedKeyId,
  type ClaimedJob,
  type JobCipher,
  type SerializedError,
} from '../../model/index.js';

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
