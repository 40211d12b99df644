import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CLAIM_CONTROLLED } from '../../lib/storage/routines/claim-controlled.routine.js';
import * as sqlFragments from '../../lib/storage/routines/sql-fragments.js';

/**
 * claim_controlled is spliced from the pieces in lib/storage/routines/. Each exported piece of a
 * fragment file says which of the routine's variables (v_…) and parameters (p_…) it reads and
 * writes, twice: in its doc comment ("Reads: …. Writes: ….") and in its `<NAME>_VARS` export. Both
 * are checked here against the piece's SQL: writes are the variables assigned (`:=`, `INTO`), reads
 * every other mention. A piece built by a function is rendered with neutral arguments, so what is
 * checked is what it says of its own.
 */

const ROUTINES = path.resolve('lib/storage/routines');
/**
 * The files of the folder that are not fragments: the routines, their machinery, the shared SQL,
 * and claim_controlled's signature (the variables the fragments use, not one of them).
 */
const NOT_FRAGMENTS =
  /\.routine\.ts$|^routine(-catalog|-installer)?\.ts$|^sql-fragments\.ts$|^claim-controlled-signature\.ts$/;

interface Vars {
  reads: readonly string[];
  writes: readonly string[];
}

/** An argument that reads as `x` wherever it is spliced, and has `x` for any field. */
const NEUTRAL: unknown = new Proxy(
  {},
  { get: (_target, key) => (key === Symbol.toPrimitive || key === 'toString' ? () => 'x' : 'x') },
);

/** A piece's SQL: a text, a builder called with neutral arguments, or an object of texts. */
function sqlOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'function') {
    return sqlOf((value as (...args: unknown[]) => unknown)(...Array<unknown>(value.length).fill(NEUTRAL)));
  }
  if (value && typeof value === 'object') return Object.values(value).map(sqlOf).join('\n');
  throw new Error(`not SQL: ${String(value)}`);
}

const sorted = (names: Iterable<string>) => [...new Set(names)].sort();
const show = (v: Vars) => `reads [${v.reads.join(', ')}], writes [${v.writes.join(', ')}]`;
const same = (a: Vars, b: Vars) => show(a) === show(b);

/** The variables and parameters a text assigns and mentions otherwise. */
function varsIn(sql: string): { reads: string[]; writes: string[] } {
  const writes: string[] = [];
  const rest = sql
    .replace(/--[^\n]*/g, '')
    .replace(/\b([vp]_\w+)\s*:=/g, (_m, name: string) => {
      writes.push(name);
      return ':=';
    })
    .replace(/\bINTO\s+([vp]_\w+(?:\s*,\s*[vp]_\w+)*)/g, (_m, list: string) => {
      writes.push(...list.split(/\s*,\s*/));
      return 'INTO';
    });
  return { reads: sorted(rest.match(/\b[vp]_\w+/g) ?? []), writes: sorted(writes) };
}

/** `claimAhead` → `CLAIM_AHEAD_VARS`; `FULL_GROUPS` → `FULL_GROUPS_VARS`. */
const varsName = (name: string) => `${name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}_VARS`;

/** The doc comment just before `export const <name>` or `export function <name>`, as one line. */
function docOf(source: string, name: string): string | null {
  const at = source.search(new RegExp(`^export (const|function) ${name}\\b`, 'm'));
  if (at < 0) return null;
  const before = source.slice(0, at).trimEnd();
  if (!before.endsWith('*/')) return null;
  const doc = before.slice(before.lastIndexOf('/**'));
  return doc
    .split('\n')
    .map((line) => line.replace(/^\s*\/?\*+\/?\s?/, '').trim())
    .join(' ');
}

/** The "Reads: …. Writes: …." of a doc comment, each as its sorted names. */
function documented(doc: string): Vars | null {
  const m = /Reads: (.*?)\. Writes: (.*?)\.(\s|$)/.exec(doc);
  if (!m) return null;
  const names = (text: string) => sorted(text.match(/\b[vp]_\w+/g) ?? []);
  return { reads: names(m[1]!), writes: names(m[2]!) };
}

/** The parameters and the DECLAREd variables of claim_controlled. */
function declared(): Set<string> {
  const t = CLAIM_CONTROLLED.template;
  const params = t.slice(0, t.indexOf('RETURNS')).match(/\bp_\w+/g) ?? [];
  const locals = t.slice(t.indexOf('DECLARE'), t.indexOf('BEGIN', t.indexOf('DECLARE'))).match(/^\s*(v_\w+)/gm) ?? [];
  return new Set([...params, ...locals.map((l) => l.trim())]);
}

interface Piece {
  file: string;
  name: string;
  sql: string;
  vars: Vars | undefined;
  doc: Vars | null;
}

async function pieces(): Promise<{ pieces: Piece[]; problems: string[] }> {
  const problems: string[] = [];
  const found: Piece[] = [];
  const files = readdirSync(ROUTINES).filter((f) => f.endsWith('.ts') && !NOT_FRAGMENTS.test(f));
  for (const file of files.sort()) {
    const module = (await import(path.join(ROUTINES, file))) as Record<string, unknown>;
    const source = readFileSync(path.join(ROUTINES, file), 'utf8');
    const names = Object.keys(module).filter((n) => !n.endsWith('_VARS'));
    for (const n of Object.keys(module).filter((k) => k.endsWith('_VARS'))) {
      if (!names.some((name) => varsName(name) === n)) problems.push(`${file}: ${n} names no fragment`);
    }
    for (const name of names) {
      const text = docOf(source, name);
      found.push({
        file,
        name,
        sql: sqlOf(module[name]),
        vars: module[varsName(name)] as Vars | undefined,
        doc: text === null ? null : documented(text),
      });
    }
  }
  return { pieces: found, problems };
}

describe("claim_controlled's pieces", () => {
  it('each says which variables it reads and writes, in its comment and its _VARS export, as its SQL does', async () => {
    const { pieces: all, problems } = await pieces();
    const known = declared();
    for (const p of all) {
      const where = `${p.file}: ${p.name}`;
      const used = varsIn(p.sql);
      if (!p.vars) {
        problems.push(`${where} has no ${varsName(p.name)} export; its SQL ${show(used)}`);
      } else {
        const said = { reads: sorted(p.vars.reads), writes: sorted(p.vars.writes) };
        if (!same(said, used)) problems.push(`${where}: ${varsName(p.name)} says ${show(said)}; its SQL ${show(used)}`);
      }
      if (!p.doc) {
        problems.push(`${where}: its doc comment has no "Reads: …. Writes: …." line; its SQL ${show(used)}`);
      } else if (!same(p.doc, used)) {
        problems.push(`${where}: its doc comment says ${show(p.doc)}; its SQL ${show(used)}`);
      }
      for (const v of [...used.reads, ...used.writes]) {
        if (!known.has(v)) problems.push(`${where} uses ${v}, which claim_controlled neither declares nor takes`);
      }
      if (used.writes.some((v) => v.startsWith('p_'))) problems.push(`${where} assigns a parameter`);
    }
    if (problems.length) throw new Error(problems.join('\n'));

    // Not vacuous: the folder's pieces were found, with what they are known to say.
    expect(all.length).toBeGreaterThanOrEqual(25);
    const byName = new Map(all.map((p) => [p.name, p]));
    expect(byName.get('FULL_GROUPS')?.vars).toEqual({ reads: ['p_queue', 'v_q'], writes: ['v_full'] });
    expect(byName.get('LIMIT_SHARE')?.vars?.writes).toContain('v_room');
    expect(known.has('v_turn') && known.has('p_ahead')).toBe(true);
  });

  it('the SQL shared with the TypeScript statements names no variable of the routine of its own', () => {
    const exported = Object.entries(sqlFragments);
    expect(exported.length).toBeGreaterThanOrEqual(10);
    for (const [name, value] of exported)
      expect([name, varsIn(sqlOf(value))]).toEqual([name, { reads: [], writes: [] }]);
  });

  it('reads what it assigns with := and INTO as writes, anything else as a read', () => {
    expect(varsIn('v_a := v_b + p_c; -- v_comment\nSELECT x INTO v_d, v_e FROM t WHERE y = v_a')).toEqual({
      reads: ['p_c', 'v_a', 'v_b'],
      writes: ['v_a', 'v_d', 'v_e'],
    });
    expect(varsIn('INSERT INTO s.t (a) SELECT v_x')).toEqual({ reads: ['v_x'], writes: [] });
  });
});
