import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { EncryptedValueError, EncryptionKeyMissingError, JobsError, type SerializedError } from './errors.js';

/** JobsModule's `encryption`: the keyring, the key new writes use, and whether every job is encrypted. */
export interface EncryptionOptions {
  /** Key id to key: 32 bytes, base64. Every listed key decrypts; ids are stored in the clear with each value. */
  keys: Record<string, string | undefined>;
  /** The id (in `keys`) of the key new values are encrypted with. */
  current: string;
  /** Encrypt every job, not only those whose `@Job` says `encrypted: true`; default false. */
  all?: boolean;
}

/** This process's encryption as health and the dashboard show it: key ids only, never keys. */
export interface EncryptionStatus {
  /** The key id new values are sealed with; null without encryption options. */
  current: string | null;
  /** The key ids this process holds. */
  keys: string[];
  /** Key ids this instance's worker met on jobs and lacks: it hands those jobs back for an instance that has them. */
  missingKeys: string[];
}

/**
 * What starts a sealed value: a version, so a later format can be told
 * apart. A sealed value is the text `$enc1:<key id>:<base64 of IV, cipher
 * text, tag>`, stored as a JSON string in jsonb columns and as is in text ones.
 */
const PREFIX = '$enc1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const WHERE = 'JobsModule "encryption"';
const EXAMPLE = "encryption: { keys: { '2026-12': process.env.JOBS_KEY }, current: '2026-12' }";

/** Whether a stored value is one JobCipher sealed. */
export function isSealed(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(PREFIX);
}

/** The key id a sealed value names, or null for a plain value. */
export function sealedKeyId(value: unknown): string | null {
  if (!isSealed(value)) return null;
  const end = value.indexOf(':', PREFIX.length);
  return end < 0 ? null : value.slice(PREFIX.length, end);
}

/** What readers without the key (or with a value that does not authenticate) are shown instead of the value. */
function sealedPlaceholder(keyId: string | null, unreadable = false): string {
  return unreadable ? `[encrypted: key '${keyId}', does not authenticate]` : `[encrypted: key '${keyId}']`;
}

/**
 * AES-256-GCM over the values of encrypted jobs: a fresh 12-byte IV per
 * value, the key id bound to it as additional data and stored beside it, so
 * any key of the keyring opens what it sealed and a rotation is a change of
 * `current`. Without `encryption` options it seals nothing and opens nothing,
 * and readers see placeholders for sealed values. The keys never leave it:
 * errors and placeholders name key ids only.
 */
export class JobCipher {
  /** The key id new values are sealed with; null without encryption options. */
  readonly current: string | null;
  /** Whether every job is encrypted (`encryption.all`). */
  readonly all: boolean;
  // KeyObjects, made once: a cipher built from one skips importing the raw key (~15% of a seal, measured).
  private readonly keys = new Map<string, KeyObject>();
  private readonly missing = new Set<string>();

  constructor(options?: EncryptionOptions) {
    this.current = null;
    this.all = false;
    if (options === undefined) return;
    if (options === null || typeof options !== 'object' || options.keys === null || typeof options.keys !== 'object') {
      throw new JobsError(`${WHERE} must be { keys, current }. Potential fix: ${EXAMPLE}.`);
    }
    for (const [id, material] of Object.entries(options.keys))
      this.keys.set(id, createSecretKey(decodeKey(id, material)));
    if (this.keys.size === 0) throw new JobsError(`${WHERE}: "keys" is empty. Potential fix: ${EXAMPLE}.`);
    if (typeof options.current !== 'string' || !this.keys.has(options.current)) {
      throw new JobsError(
        `${WHERE}: "current" (${JSON.stringify(options.current)}) is not one of the ids in "keys" (${[...this.keys.keys()].join(', ')}). ` +
          `Potential fix: set "current" to the id of the key new values should use.`,
      );
    }
    if (options.all !== undefined && typeof options.all !== 'boolean') {
      throw new JobsError(`${WHERE}: "all" must be true or false. Potential fix: all: true, or leave it out.`);
    }
    this.current = options.current;
    this.all = options.all ?? false;
  }

  /** Whether this process can seal: it has encryption options. */
  get enabled(): boolean {
    return this.current !== null;
  }

  /** The key ids this process holds. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  /** Whether this process holds the key a sealed value names (a plain value needs none). */
  canOpen(value: unknown): boolean {
    const id = sealedKeyId(value);
    return id === null || this.keys.has(id);
  }

  /** The key ids, and those a worker of this process met on jobs and lacked. */
  status(): EncryptionStatus {
    return { current: this.current, keys: this.keyIds, missingKeys: [...this.missing].sort() };
  }

  /** Records that a worker met a job sealed with a key it lacks; true the first time for that key. */
  noteMissing(keyId: string): boolean {
    if (this.missing.has(keyId)) return false;
    this.missing.add(keyId);
    return true;
  }

  /** Seals text with the current key. */
  sealText(plain: string): string {
    const id = this.current;
    if (id === null) {
      throw new JobsError(
        `An encrypted job's value cannot be sealed: no keys. Potential fix: JobsModule.forRoot({ ${EXAMPLE} }).`,
      );
    }
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(id)!, iv);
    cipher.setAAD(Buffer.from(id));
    const body = Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}${id}:${body.toString('base64')}`;
  }

  /** A value's JSON, sealed, as the JSON of the sealed string (what a jsonb column takes). */
  sealJson(json: string): string {
    return JSON.stringify(this.sealText(json));
  }

  /** Opens text sealText made; plain text passes. Throws EncryptionKeyMissingError or EncryptedValueError. */
  openText(value: string, what: string): string {
    if (!isSealed(value)) return value;
    const id = sealedKeyId(value);
    const key = id === null ? undefined : this.keys.get(id);
    if (!key) throw new EncryptionKeyMissingError(what, id ?? '?');
    const body = Buffer.from(value.slice(PREFIX.length + id!.length + 1), 'base64');
    try {
      if (body.length < IV_BYTES + TAG_BYTES) throw new Error('too short');
      const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(id!));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new EncryptedValueError(what, id!);
    }
  }

  /** A JSON value as stored: a sealed one opened and parsed, a plain one as it is. */
  openValue(value: unknown, what: string): unknown {
    return isSealed(value) ? (JSON.parse(this.openText(value, what)) as unknown) : value;
  }

  /** openValue for readers: a value it cannot open becomes its placeholder. */
  revealValue(value: unknown): unknown {
    return this.reveal(value, () => this.openValue(value, 'value'));
  }

  /** openText for readers: a value it cannot open becomes its placeholder. */
  revealText(value: string | null): string | null {
    return value === null ? null : (this.reveal(value, () => this.openText(value, 'value')) as string);
  }

  /** An error with its message and stack sealed (its name stays readable). */
  sealError(error: SerializedError): SerializedError {
    const sealed: SerializedError = { ...error, message: this.sealText(error.message) };
    if (error.stack !== undefined) sealed.stack = this.sealText(error.stack);
    return sealed;
  }

  /** An error as stored, its message and stack opened where this process can, placeholders where not. */
  revealError<E extends SerializedError | null>(error: E): E {
    if (error === null || (!isSealed(error.message) && !isSealed(error.stack))) return error;
    const shown: SerializedError = { ...error, message: this.revealText(error.message) ?? '' };
    if (typeof error.stack === 'string') shown.stack = this.revealText(error.stack) ?? undefined;
    return shown as E;
  }

  /** Re-seals a stored value with the current key; null when it is plain or already uses it. */
  reseal(value: unknown, json: boolean): string | null {
    const id = sealedKeyId(value);
    if (id === null || id === this.current) return null;
    const text = this.openText(value as string, `a value sealed with key '${id}'`);
    return json ? this.sealJson(text) : this.sealText(text);
  }

  private reveal(value: unknown, open: () => unknown): unknown {
    if (!isSealed(value)) return value;
    try {
      return open();
    } catch (error) {
      return sealedPlaceholder(sealedKeyId(value), error instanceof EncryptedValueError);
    }
  }
}

/** A key as the options give it: base64 of exactly 32 bytes, under an id that can be stored in the clear. */
function decodeKey(id: string, material: string | undefined): Buffer {
  if (!KEY_ID.test(id)) {
    throw new JobsError(
      `${WHERE}: key id ${JSON.stringify(id)} must be 1 to 64 letters, digits, '.', '_' or '-'. Potential fix: an id such as '2026-12'.`,
    );
  }
  if (typeof material !== 'string' || material === '') {
    throw new JobsError(
      `${WHERE}: key '${id}' is ${material === '' ? 'empty' : 'not set'}. Potential fix: set it to 32 random bytes in base64, e.g. the output of \`openssl rand -base64 32\` (check the environment variable it is read from).`,
    );
  }
  const trimmed = material.trim();
  const bytes = Buffer.from(trimmed, 'base64');
  if (!BASE64.test(trimmed) || trimmed.length % 4 !== 0 || bytes.toString('base64') !== trimmed) {
    throw new JobsError(
      `${WHERE}: key '${id}' is not base64. Potential fix: generate one with \`openssl rand -base64 32\`.`,
    );
  }
  if (bytes.length !== KEY_BYTES) {
    throw new JobsError(
      `${WHERE}: key '${id}' is ${bytes.length} bytes; AES-256 takes ${KEY_BYTES}. Potential fix: generate one with \`openssl rand -base64 32\`.`,
    );
  }
  return bytes;
}
