import { JobsError } from '../../lib/model/index.js';
import { enqueueAfterForm, graphAfterForm, parseAfter } from '../../lib/queue/after-parser.js';

const ID = '01937C5E-1A2B-7C3D-8E4F-5A6B7C8D9E0F';
const id = ID.toLowerCase();
const TRIGGERS = "'success', 'failure', 'any-failure' or 'always'";

/** The message parseAfter refuses `after` with, or null when it takes it. */
function refusal(run: () => unknown): string | null {
  try {
    run();
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(JobsError);
    return (error as Error).message;
  }
}

describe("enqueue()'s after", () => {
  const parse = (after: unknown) => parseAfter(after, enqueueAfterForm('send'));

  it('reads a bare id as one job waited on for success, and lower-cases ids', () => {
    expect(parse(ID)).toEqual([{ job: id, on: 'success' }]);
    expect(parse([{ job: ID, on: 'always' }, { batch: ID }])).toEqual([
      { job: id, on: 'always' },
      { batch: id, on: 'success' },
    ]);
  });

  it.each<[string, unknown, string]>([
    [
      'an empty list',
      [],
      `enqueue('send'): "after" must be a job id or a non-empty list of { job | batch, on }, got an array (0 items). Potential fix: after: parentId.`,
    ],
    [
      'a string in the list',
      ['x'],
      `enqueue('send'): "after" entry 0 is not { job: id } or { batch: id } with a valid id (got the string "x"). Potential fix: { job: '<uuid>', on: 'success' }.`,
    ],
    [
      'a bare string that is no id',
      'x',
      `enqueue('send'): "after" entry 0 is not { job: id } or { batch: id } with a valid id (got job the string "x"). Potential fix: { job: '<uuid>', on: 'success' }.`,
    ],
    [
      'a job and a batch in one entry',
      [{ job: ID, batch: ID }],
      `enqueue('send'): "after" entry 0 names both a job and a batch. Potential fix: one entry each, after: [{ job: jobId }, { batch: batchId }].`,
    ],
    [
      'an unknown "on"',
      [{ batch: ID, on: 'some-failure' }],
      `enqueue('send'): "on" of "after" entry 0 must be ${TRIGGERS}, got the string "some-failure". Potential fix: { batch: id, on: 'always' }.`,
    ],
    [
      'a hole',
      // eslint-disable-next-line no-sparse-arrays
      [{ job: ID }, , { job: ID }],
      `enqueue('send'): "after" entry 1 is not { job: id } or { batch: id } with a valid id (got undefined). Potential fix: { job: '<uuid>', on: 'success' }.`,
    ],
  ])('refuses %s', (_, after, message) => {
    expect(refusal(() => parse(after))).toBe(message);
  });

  it('refuses a step key, which means nothing outside a flow or batch', () => {
    expect(refusal(() => parse([{ key: 'a' }]))).toMatch(/^enqueue\('send'\): "after" entry 0: unknown option "key"/);
  });
});

describe("a flow step's or a batch member's after", () => {
  const parse = (after: unknown) => parseAfter(after, graphAfterForm("flow().add('b')", "{ after: ['a'] }"));
  const entry = (what: string) =>
    `flow().add('b'): "after" entry 0 ${what}. Each entry is a step key, { key, on }, { job: id, on } or { batch: id, on }, ` +
    `with "on" one of ${TRIGGERS}. Potential fix: { after: ['a'] }.`;

  it('reads a bare string as a step key, and takes an empty list', () => {
    expect(parse([])).toEqual([]);
    expect(parse(['a', { key: 'c', on: 'failure' }, { job: ID }])).toEqual([
      { key: 'a', on: 'success' },
      { key: 'c', on: 'failure' },
      { job: id, on: 'success' },
    ]);
  });

  it.each<[string, unknown, string]>([
    [
      'a bare string',
      'a',
      `flow().add('b'): "after" must be an array of step keys, { key, on }, { job, on } or { batch, on }, got the string "a". Potential fix: { after: ['a'] }.`,
    ],
    ['an entry naming nothing', [{}], entry('is an object')],
    ['a key and a job in one entry', [{ key: 'a', job: ID }], entry('names key and job: one of them only')],
    ['a key that is not a string', [{ key: 5 }], entry('has key 5, not a string')],
    ['a job id that is no id', [{ job: 'not-an-id' }], entry('has job the string "not-an-id", not an id')],
    ['an unknown "on"', [{ key: 'a', on: 'later' }], entry('has "on" the string "later"')],
  ])('refuses %s', (_, after, message) => {
    expect(refusal(() => parse(after))).toBe(message);
  });
});
