import {
  fixedStatement,
  isStatement,
  statement,
  withNames,
  type Queryable,
} from '../../lib/storage/sql/named-params.js';

/** An executor that records what it was sent. */
function recorder() {
  const sent: Array<{ text: string; values: unknown[] | undefined; name: string | undefined }> = [];
  const on: Queryable = {
    query: <T>(text: string, values?: unknown[], name?: string) => {
      sent.push({ text, values, name });
      return Promise.resolve([] as T[]);
    },
  };
  return { sent, on };
}

const fenced = statement<{ jobId: string; attempt: number; workerId: string }>()(
  ['jobId', 'attempt', 'workerId'],
  (p) => `UPDATE job SET x = 1 WHERE id = ${p.jobId} AND attempt = ${p.attempt} AND worker_id = ${p.workerId}`,
);

describe('named parameters (lib/storage/sql/named-params.ts)', () => {
  it('numbers the placeholders in the declared order, whatever order the text uses them in', () => {
    const s = statement<{ a: string; b: number; c: boolean }>()(
      ['b', 'c', 'a'],
      (p) => `SELECT ${p.a}, ${p.b}, ${p.c}`,
    );
    expect(s.text).toBe('SELECT $3, $1, $2');
    expect(s.params).toEqual(['b', 'c', 'a']);
    expect(fenced.text).toBe('UPDATE job SET x = 1 WHERE id = $1 AND attempt = $2 AND worker_id = $3');
  });

  it('reads the values in placeholder order, not in the order of the object given', () => {
    const s = statement<{ a: string; b: number; c: boolean }>()(
      ['b', 'c', 'a'],
      (p) => `SELECT ${p.a}, ${p.b}, ${p.c}`,
    );
    expect(s.values({ c: true, a: 'x', b: 2 })).toEqual([2, true, 'x']);
    expect(fenced.values({ workerId: 'w', jobId: 'j', attempt: 3 })).toEqual(['j', 3, 'w']);
  });

  it('gives one name used twice one placeholder and one value', () => {
    const s = statement<{ now: Date; id: string }>()(
      ['id', 'now'],
      (p) => `UPDATE t SET a = ${p.now}, b = ${p.now}::timestamptz WHERE id = ${p.id}`,
    );
    expect(s.text).toBe('UPDATE t SET a = $2, b = $2::timestamptz WHERE id = $1');
    const now = new Date(0);
    expect(s.values({ id: 'i', now })).toEqual(['i', now]);
  });

  it('sends nulls and ignores keys it does not declare', () => {
    const s = statement<{ a: string | null }>()(['a'], (p) => `SELECT ${p.a}`);
    const args = { a: null, extra: 1 };
    expect(s.values(args)).toEqual([null]);
  });

  it('refuses an order that names a parameter twice', () => {
    expect(() => statement<{ a: string }>()(['a', 'a'], (p) => `SELECT ${p.a}`)).toThrow(/listed twice/);
  });

  it('runs with its text, its values and its name once named; the unnamed one stays unnamed', async () => {
    const { sent, on } = recorder();
    await fenced.run(on, { jobId: 'j', attempt: 1, workerId: 'w' });
    const named = fenced.named('durable_jobs_x');
    await named.run(on, { jobId: 'k', attempt: 2, workerId: 'v' });
    expect(sent).toEqual([
      { text: fenced.text, values: ['j', 1, 'w'], name: undefined },
      { text: fenced.text, values: ['k', 2, 'v'], name: 'durable_jobs_x' },
    ]);
    expect(fenced.name).toBeUndefined();
    expect(`${named}`).toBe(fenced.text);
  });

  it('names the statements of a builder, leaving its other entries as they are', () => {
    const perCall = (where: string) => `SELECT 1 WHERE ${where}`;
    const sql = { fenced, fixed: fixedStatement('SELECT 1'), perCall };
    const named = withNames(sql, (key) => (key === 'fenced' ? `n_${key}` : undefined));
    expect(named.fenced.name).toBe('n_fenced');
    expect(named.fixed.name).toBeUndefined();
    expect(named.perCall).toBe(perCall);
    expect(isStatement(named.fixed) && isStatement(named.fenced) && !isStatement(perCall)).toBe(true);
    expect(named.fixed.values({})).toEqual([]);
  });

  it('makes a missing, misspelled, mistyped or undeclared key a compile error', () => {
    // Each line below fails to compile without its @ts-expect-error: tsc (npm run lint) checks this file.
    // @ts-expect-error attempt is missing
    expect(fenced.values({ jobId: 'j', workerId: 'w' })).toEqual(['j', undefined, 'w']);
    // @ts-expect-error jobid is not jobId
    expect(fenced.values({ jobid: 'j', attempt: 1, workerId: 'w' })).toEqual([undefined, 1, 'w']);
    // @ts-expect-error attempt is a number
    expect(fenced.values({ jobId: 'j', attempt: '1', workerId: 'w' })).toEqual(['j', '1', 'w']);
    // @ts-expect-error the order leaves b out
    statement<{ a: string; b: string }>()(['a'], (p) => `SELECT ${p.a}`);
    // @ts-expect-error the order names a key the parameters lack
    statement<{ a: string }>()(['a', 'c'], (p) => `SELECT ${p.a}`);
    // @ts-expect-error the text uses a parameter that is not declared
    statement<{ a: string }>()(['a'], (p) => `SELECT ${p.a}, ${p.b}`);
  });
});
