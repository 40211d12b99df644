import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { JobCipher } from '../../lib/model/index.js';
import { PostgresAdminStorage } from '../../lib/storage/admin/postgres-admin-storage.js';
import type { BulkChunk, JobFilter } from '../../lib/storage/admin/admin-storage.interface.js';
import { routineSql, type Routine } from '../../lib/storage/routines/routine.js';
import { isStatement } from '../../lib/storage/sql/named-params.js';
import { ROUTINES } from '../../lib/storage/routines/routine-catalog.js';
import type { StorageContext } from '../../lib/storage/sql/storage-context.js';

/**
 * Every database routine and every statement of the storage folders, rendered as PostgreSQL
 * receives it for one schema, against the snapshots in test/fixtures/sql/: a reviewer reads a
 * change to any of them as a diff of real SQL. `npm run sql:snapshots` (UPDATE_SQL_SNAPSHOTS=1)
 * rewrites them.
 *
 * What is rendered is found, not listed: the routines of the catalog (and every defineRoutine of
 * lib/ must be in it), and every `export function <x>Statements(schema)` under lib/storage/, each
 * statement of the object it returns (a Statement of sql/named-params.ts, rendered once; a bare
 * string fails the test, its parameters unnamed). A statement built per call (a function in that
 * object) needs its variants in CALL_VARIANTS below, or the test fails.
 *
 * Not rendered: SQL outside those objects, none of it on the hot path: the migrator's and the
 * routine installer's own reads of the catalog, the session settings, LISTEN, savepoints, and the
 * replica's lag and WAL position reads (monitoring/replica-lag.ts, sql/wal-position.ts).
 */

const SCHEMA = 'durable_jobs';
const SNAPSHOTS = path.resolve('test/fixtures/sql');
const STORAGE = path.resolve('lib/storage');
const UPDATE = process.env.UPDATE_SQL_SNAPSHOTS === '1';
const HEADER = '-- Rendered by test/unit/sql-snapshots.spec.ts; regenerate with npm run sql:snapshots';
const NAME_LINE = /^-- name: (.+)$/gm;

/** One snapshot file: its path under test/fixtures/sql/, its header lines, and its statements by name. */
interface Snapshot {
  file: string;
  about: string[];
  statements: Array<[name: string, text: string]>;
}

/** The file's text: the header, then each statement after its `-- name:` line, exactly as rendered. */
function fileText(s: Snapshot): string {
  const head = [HEADER, ...s.about.map((line) => `-- ${line}`)].join('\n');
  return [head, ...s.statements.map(([name, text]) => `-- name: ${name}\n${text}`)].join('\n\n') + '\n';
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? tsFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]))
    .filter((f) => f.endsWith('.ts'))
    .sort();
}

const relative = (file: string) => path.relative(process.cwd(), file).split(path.sep).join('/');
const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * What the admin storage sends for statements built per call around an operator's filter: with no
 * filter, and with every field of it set (each state predicate's kind among the states). Captured
 * from PostgresAdminStorage itself on an executor that records the text, so the filter's
 * conditions and parameters are the ones the code builds.
 */
function adminSent(): Record<string, Array<[string, string]>> {
  const sent: string[] = [];
  const executor = {
    query: (text: string) => {
      sent.push(text);
      return Promise.resolve([]);
    },
  };
  const context = { schema: SCHEMA, channel: 'durable_jobs_events', executor, cipher: new JobCipher() };
  const admin = new PostgresAdminStorage(context as unknown as StorageContext);
  const now = new Date('2026-01-01T00:00:00Z');
  const none: JobFilter = { states: null, queue: null, name: null, batchId: null, idPrefix: null, ids: null, now };
  const every: JobFilter = {
    states: ['queued', 'scheduled', 'active', 'failed'],
    queue: 'q',
    name: 'n',
    batchId: '00000000-0000-7000-8000-000000000000',
    idPrefix: '019a',
    ids: ['00000000-0000-7000-8000-000000000001'],
    now,
  };
  const one = (call: () => Promise<unknown>): string => {
    sent.length = 0;
    void call();
    expect(sent).toHaveLength(1);
    return sent[0]!;
  };
  const filters: Array<[string, JobFilter]> = [
    ['no filter', none],
    ['every filter', every],
  ];
  const search = (f: JobFilter, extra: boolean) => ({
    ...f,
    nameContains: extra ? 'x' : null,
    before: extra ? '00000000-0000-7000-8000-000000000002' : null,
    limit: 50,
  });
  const chunk = (f: JobFilter, extra: boolean): BulkChunk => ({
    ...f,
    after: extra ? '00000000-0000-7000-8000-000000000003' : null,
    limit: 500,
  });
  const variants = (render: (f: JobFilter, extra: boolean) => string) =>
    filters.map(([label, f], i): [string, string] => [label, render(f, i > 0)]);
  return {
    search: variants((f, extra) => one(() => admin.searchJobs(search(f, extra)))),
    retry: variants((f, extra) => one(() => admin.retryChunk(chunk(f, extra), now))),
    cancel: variants((f, extra) => one(() => admin.cancelChunk(chunk(f, extra), now))),
    requestCancel: variants((f, extra) => one(() => admin.requestCancelChunk(chunk(f, extra)))),
    listBatches: [
      ['no filter', one(() => admin.listBatches({ state: null, name: null, before: null, limit: 50 }))],
      [
        'every filter',
        one(() =>
          admin.listBatches({
            state: 'succeeded',
            name: 'b',
            before: '00000000-0000-7000-8000-000000000004',
            limit: 50,
          }),
        ),
      ],
    ],
  };
}

/**
 * The statements built per call, by builder and key: their variants (label, text), or why they
 * have none of their own. A new function in a statements object fails the test until it is here.
 */
const CALL_VARIANTS: Record<string, Record<string, (() => Array<[string, string]>) | string>> = {
  adminStatements: {
    search: () => adminSent().search!,
    chunk: 'sent only inside retry, cancel and requestCancel, rendered there',
    retry: () => adminSent().retry!,
    cancel: () => adminSent().cancel!,
    requestCancel: () => adminSent().requestCancel!,
    listBatches: () => adminSent().listBatches!,
  },
};

/** Every routine, as the installer sends it: `:SCHEMA` and `:ROUTINE` replaced (routineSql). */
function routineSnapshots(sources: Map<Routine, string>): Snapshot[] {
  return ROUTINES.map((r) => ({
    file: `routines/${r.base}.sql`,
    about: [
      `${r.base}, installed as ${r.name}, of ${sources.get(r) ?? '(unknown file)'}, for schema ${SCHEMA}:`,
      'the CREATE FUNCTION statement exactly as the installer sends it (not reformatted; trailing spaces kept).',
    ],
    statements: [[r.name, routineSql(r, SCHEMA)]],
  }));
}

/** The statement builders of lib/storage/: `export function <x>Statements(` in any file. */
function builderFiles(): Array<{ file: string; builder: string }> {
  return tsFiles(STORAGE).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/^export function (\w+Statements)\(/gm)].map((m) => ({
      file,
      builder: m[1]!,
    })),
  );
}

async function statementSnapshots(): Promise<{ snapshots: Snapshot[]; problems: string[] }> {
  const problems: string[] = [];
  const snapshots: Snapshot[] = [];
  for (const { file, builder } of builderFiles()) {
    const module = (await import(file)) as Record<string, unknown>;
    const build = module[builder] as (schema: string) => Record<string, unknown>;
    const statements: Array<[string, string]> = [];
    const notes: string[] = [];
    for (const [key, value] of Object.entries(build(SCHEMA))) {
      if (isStatement(value)) {
        statements.push([key, value.text]);
        continue;
      }
      if (typeof value === 'string') {
        problems.push(
          `${builder}().${key} in ${relative(file)} is a bare text with positional parameters: make it a statement() of lib/storage/sql/named-params.ts`,
        );
        continue;
      }
      const variants = CALL_VARIANTS[builder]?.[key];
      if (typeof variants === 'function') {
        const rendered = variants();
        for (const [label, text] of rendered) statements.push([`${key} [${label}]`, text]);
        notes.push(`${key}: built per call; rendered ${rendered.map(([label]) => `with ${label}`).join(' and ')}.`);
      } else if (typeof variants === 'string') {
        notes.push(`${key}: built per call; ${variants}.`);
      } else {
        problems.push(
          `${builder}().${key} in ${relative(file)} is built per call: add the variants the code sends to CALL_VARIANTS in test/unit/sql-snapshots.spec.ts`,
        );
      }
    }
    snapshots.push({
      file: `statements/${kebab(builder.replace(/Statements$/, ''))}.sql`,
      about: [
        `${builder}('${SCHEMA}') of ${relative(file)}: each statement after its "-- name:" line,`,
        'exactly as PostgreSQL receives it (not reformatted; trailing spaces kept).',
        ...notes,
      ],
      statements,
    });
  }
  return { snapshots, problems };
}

/** The routines defined anywhere in lib/, and the file of each. */
async function definedRoutines(): Promise<Map<Routine, string>> {
  const found = new Map<Routine, string>();
  for (const file of tsFiles(path.resolve('lib'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^export const (\w+) = defineRoutine\(/gm)) {
      const module = (await import(file)) as Record<string, unknown>;
      found.set(module[m[1]!] as Routine, relative(file));
    }
  }
  return found;
}

/** The first line where two texts differ, with a few lines of each around it and the statement it falls in. */
function firstDifference(file: string, expected: string, actual: string): string {
  const want = expected.split('\n');
  const got = actual.split('\n');
  let i = 0;
  while (i < want.length && i < got.length && want[i] === got[i]) i++;
  const name =
    [
      ...got
        .slice(0, i + 1)
        .join('\n')
        .matchAll(NAME_LINE),
    ].pop()?.[1] ?? '(header)';
  const around = (lines: string[]) =>
    lines
      .slice(Math.max(0, i - 2), i + 3)
      .map((line, k) => `${Math.max(0, i - 2) + k + 1 === i + 1 ? '>' : ' '} ${Math.max(0, i - 2) + k + 1}| ${line}`)
      .join('\n');
  return [
    `test/fixtures/sql/${file} differs from the rendered SQL at line ${i + 1} (in ${name}):`,
    '  snapshot:',
    around(want),
    '  rendered:',
    around(got),
  ].join('\n');
}

/** The statement names a snapshot file holds. */
const namesIn = (text: string) => [...text.matchAll(NAME_LINE)].map((m) => m[1]!);

function snapshotFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)],
    );
  try {
    return walk(SNAPSHOTS)
      .map((f) => path.relative(SNAPSHOTS, f).split(path.sep).join('/'))
      .sort();
  } catch {
    return [];
  }
}

describe('SQL snapshots (test/fixtures/sql/)', () => {
  it('hold every routine and every statement exactly as rendered, and nothing else', async () => {
    const defined = await definedRoutines();
    const { snapshots: statements, problems } = await statementSnapshots();
    const snapshots = [...routineSnapshots(defined), ...statements];

    // Not vacuous: the catalog, the builders and their statements were all found.
    for (const r of defined.keys()) {
      if (!ROUTINES.includes(r)) problems.push(`${r.base} (${defined.get(r)}) is not in ROUTINES (routine-catalog.ts)`);
    }
    expect(ROUTINES.map((r) => r.base)).toEqual(
      expect.arrayContaining(['claim_controlled', 'settle_jobs', 'release_children', 'reopen_job']),
    );
    expect(defined.size).toBe(ROUTINES.length);
    expect(statements.length).toBeGreaterThanOrEqual(14);
    for (const s of snapshots) if (s.statements.length === 0) problems.push(`${s.file} would hold no statement`);
    const all = snapshots.flatMap((s) => s.statements);
    expect(all.length).toBeGreaterThan(120);
    // The claim's statements, and the outcome write that claims, call claim_controlled by its installed name.
    const claimControlled = ROUTINES.find((r) => r.base === 'claim_controlled')!;
    expect(
      all.filter(([, text]) => text.includes(`"${SCHEMA}".${claimControlled.name}(`)).length,
    ).toBeGreaterThanOrEqual(2);
    for (const [name, text] of all) {
      if (!/\b(SELECT|UPDATE|INSERT|DELETE|CREATE FUNCTION)\b/.test(text)) problems.push(`${name} holds no SQL`);
      if (/:SCHEMA|:ROUTINE|undefined|\[object /.test(text)) problems.push(`${name} holds a placeholder unsubstituted`);
      if (/^-- name: /m.test(text)) problems.push(`${name} holds a "-- name:" line, which splits its snapshot`);
    }

    const rendered = new Map(snapshots.map((s) => [s.file, fileText(s)]));
    const onDisk = snapshotFiles();
    if (UPDATE) {
      for (const file of onDisk) if (!rendered.has(file)) rmSync(path.join(SNAPSHOTS, file));
      for (const [file, text] of rendered) {
        mkdirSync(path.dirname(path.join(SNAPSHOTS, file)), { recursive: true });
        writeFileSync(path.join(SNAPSHOTS, file), text);
      }
    } else {
      for (const file of onDisk) {
        if (!rendered.has(file)) {
          problems.push(`test/fixtures/sql/${file} is left for a routine or statement group that no longer exists`);
        }
      }
      for (const [file, text] of rendered) {
        let saved: string;
        try {
          saved = readFileSync(path.join(SNAPSHOTS, file), 'utf8');
        } catch {
          problems.push(`test/fixtures/sql/${file} is missing: ${namesIn(text).join(', ')} have no snapshot`);
          continue;
        }
        if (saved === text) continue;
        const want = namesIn(saved);
        const got = namesIn(text);
        const added = got.filter((n) => !want.includes(n));
        const gone = want.filter((n) => !got.includes(n));
        if (added.length) problems.push(`test/fixtures/sql/${file} has no snapshot of ${added.join(', ')}`);
        if (gone.length) problems.push(`test/fixtures/sql/${file} holds ${gone.join(', ')}, no longer rendered`);
        problems.push(firstDifference(file, saved, text));
      }
    }
    if (problems.length) {
      throw new Error(
        `${problems.join('\n\n')}\n\nIf the change is meant, regenerate the snapshots with npm run sql:snapshots and review their diff.`,
      );
    }
  });
});
