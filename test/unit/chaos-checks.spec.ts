import { evaluate } from '../../chaos/checks.js';
import type { JobFacts } from '../../chaos/database.js';
import { parseOptions, UsageError } from '../../chaos/options.js';

// The chaos suite's verdicts, fed facts a broken library could leave behind:
// a suite that cannot fail proves nothing.

let n = 0;
function job(overrides: Partial<JobFacts> = {}): JobFacts {
  const seq = n++;
  return {
    id: `00000000-0000-7000-8000-${String(seq).padStart(12, '0')}`,
    seq,
    transactional: false,
    state: 'succeeded',
    attempt: 1,
    maxAttempts: 25,
    errorName: null,
    sideEffects: 1,
    ownSideEffects: 1,
    interrupted: 0,
    failedExecutions: 0,
    succeededExecutions: 0,
    successRecords: 1,
    ...overrides,
  };
}

function verdicts(jobs: JobFacts[], enqueued = jobs.length, orphans = 0) {
  return Object.fromEntries(evaluate(jobs, enqueued, orphans).map((c) => [c.name, c.passed]));
}

const ALL_PASS = {
  'every job succeeded': true,
  'no job lost': true,
  'each success recorded once': true,
  'each success has its side effect': true,
  'extra side effects explained': true,
  'transactional: one effect per job': true,
};

beforeEach(() => (n = 0));

it('a clean run passes every check', () => {
  expect(verdicts([job(), job(), job()])).toEqual(ALL_PASS);
});

it('extra side effects pass while interrupted executions cover them, and fail beyond that', () => {
  const covered = job({ attempt: 3, sideEffects: 3, ownSideEffects: 1, interrupted: 2 });
  // An interrupted attempt that never reached its side effect: fewer effects than interruptions is fine.
  const under = job({ attempt: 4, sideEffects: 1, ownSideEffects: 1, interrupted: 3 });
  expect(verdicts([covered, under])).toEqual(ALL_PASS);
  const rerunUnrecorded = job({ sideEffects: 2, ownSideEffects: 2, interrupted: 0 });
  expect(verdicts([job(), rerunUnrecorded])['extra side effects explained']).toBe(false);
  expect(verdicts([job()], 1, 1)['extra side effects explained']).toBe(false);
});

it('a transactional job has exactly one effect: a second one fails even where an interruption would explain it', () => {
  const tx = (o: Partial<JobFacts>) => job({ transactional: true, ...o });
  expect(verdicts([tx({}), tx({ attempt: 3, interrupted: 2 }), job({ sideEffects: 2, interrupted: 1 })])).toEqual(
    ALL_PASS,
  );
  const doubled = tx({ attempt: 2, sideEffects: 2, interrupted: 1 });
  const result = verdicts([tx({}), doubled]);
  expect(result['transactional: one effect per job']).toBe(false);
  // The plain rule alone would have let it through.
  expect(result['extra side effects explained']).toBe(true);
  const unfinishedWithEffect = tx({ state: 'queued', sideEffects: 1, ownSideEffects: 1, successRecords: 0 });
  expect(verdicts([unfinishedWithEffect])['transactional: one effect per job']).toBe(false);
});

it('a job missing, or enqueued twice, is loss', () => {
  const jobs = [job(), job(), job()];
  expect(verdicts(jobs.slice(1), 3)['no job lost']).toBe(false);
  expect(verdicts([...jobs, { ...jobs[1]!, id: 'another' }], 3)['no job lost']).toBe(false);
});

it('a success written twice, or written and then undone, fails', () => {
  expect(verdicts([job(), job({ successRecords: 2 })])['each success recorded once']).toBe(false);
  const undone = job({ state: 'queued', successRecords: 1 });
  const result = verdicts([job(), undone]);
  expect(result['each success recorded once']).toBe(false);
  expect(result['every job succeeded']).toBe(false);
  expect(verdicts([job({ succeededExecutions: 2 })])['each success recorded once']).toBe(false);
});

it('a success without the side effect of its own attempt fails', () => {
  expect(verdicts([job({ attempt: 2, ownSideEffects: 0, interrupted: 1 })])['each success has its side effect']).toBe(
    false,
  );
});

it('jobs failed by crashes are told apart from other failures and unfinished jobs', () => {
  const checks = evaluate(
    [
      job({ state: 'failed', errorName: 'LeaseLostError', sideEffects: 0, ownSideEffects: 0, successRecords: 0 }),
      job({ state: 'failed', errorName: 'Error', sideEffects: 0, ownSideEffects: 0, successRecords: 0 }),
      job({ state: 'active', sideEffects: 0, ownSideEffects: 0, successRecords: 0 }),
    ],
    3,
    0,
  );
  const succeeded = checks.find((c) => c.name === 'every job succeeded')!;
  expect(succeeded.passed).toBe(false);
  expect(succeeded.summary).toContain('failed with attempts used up by crashes: 1, failed otherwise: 1');
  expect(succeeded.summary).toContain('not finished: 1');
  expect(succeeded.examples).toHaveLength(3);
});

describe('chaos options', () => {
  it('defaults to the full run, and --ci to the short one that later flags override', () => {
    expect(parseOptions([], '/repo')).toMatchObject({ jobs: 20_000, duration: 0, workers: 3, timeout: 900 });
    expect(parseOptions(['--ci'], '/repo')).toMatchObject({ jobs: 4500, duration: 30, outage: 2, timeout: 210 });
    expect(parseOptions(['--ci', '--jobs', '500'], '/repo')).toMatchObject({ jobs: 500, duration: 30 });
    expect(parseOptions(['--kill-every', '1-2.5', '--seed', '7'], '/repo')).toMatchObject({
      killEvery: { min: 1, max: 2.5 },
      seed: 7,
    });
    expect(parseOptions(['--help'], '/repo')).toBeNull();
  });

  it('refuses what it cannot use', () => {
    expect(parseOptions([], '/repo')!.handlers).toBe('both');
    expect(parseOptions(['--handlers', 'transactional'], '/repo')!.handlers).toBe('transactional');
    const bad = [
      ['--jobs', '0'],
      ['--jobs', 'x'],
      ['--kill-every', '5-2'],
      ['--frobnicate'],
      ['extra'],
      ['--handlers', 'tx'],
    ];
    for (const args of bad) {
      expect(() => parseOptions(args, '/repo')).toThrow(UsageError);
    }
  });
});
