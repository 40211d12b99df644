import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { quoteIdent } from '../connection/sql-identifiers.js';

/**
 * One version of the schema: `NNNN-name.sql` beside this file, and its
 * `NNNN-name.down.sql`. A released file never changes (its checksum is
 * recorded in every database it migrated, and a unit test pins it); a
 * changed table or function ships as the next version. `:SCHEMA` stands for
 * the quoted schema name.
 */
export interface SchemaMigration {
  version: number;
  name: string;
  /** The file's text, placeholder included: what is checksummed. */
  up: string;
  down: string;
  /** First 16 hex digits of the SHA-1 of `up`, as recorded in schema_version. */
  checksum: string;
}

const FILE = /^(\d{4})-([a-z0-9-]+)\.sql$/;
const DIRECTORY = new URL('./', import.meta.url);

let loaded: readonly SchemaMigration[] | null = null;

/** Every version, in order; read once from the files shipped beside this module. */
export function schemaMigrations(): readonly SchemaMigration[] {
  return (loaded ??= readMigrations());
}

/** A migration's SQL for one schema. */
export function migrationSql(text: string, schema: string): string {
  return text.replaceAll(':SCHEMA', quoteIdent(schema));
}

function readMigrations(): SchemaMigration[] {
  const read = (file: string) => readFileSync(new URL(file, DIRECTORY), 'utf8').replace(/\r\n/g, '\n');
  const files = readdirSync(DIRECTORY)
    .filter((f) => FILE.test(f))
    .sort();
  return files.map((file, index) => {
    const [, number, name] = FILE.exec(file)!;
    const version = Number(number);
    // A gap or a duplicate would make "the versions it lacks" ambiguous between builds.
    if (version !== index + 1) {
      throw new Error(`nestjs-durable-jobs: migration ${file} is out of sequence (expected version ${index + 1})`);
    }
    const up = read(file);
    return {
      version,
      name: name!,
      up,
      down: read(file.replace(/\.sql$/, '.down.sql')),
      checksum: createHash('sha1').update(up).digest('hex').slice(0, 16),
    };
  });
}
