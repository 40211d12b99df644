import {
  canTransition,
  CANCELLABLE_STATES,
  isTerminal,
  JOB_STATES,
  RETRYABLE_STATES,
} from '../../lib/model/job-state.js';

describe('job state machine', () => {
  it.each([
    ['waiting', 'queued'],
    ['queued', 'active'],
    ['active', 'succeeded'],
    ['active', 'failed'],
    ['active', 'queued'],
    ['active', 'cancelled'],
    ['failed', 'queued'],
    ['cancelled', 'queued'],
  ] as const)('allows %s -> %s', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
  });

  it.each([
    ['succeeded', 'queued'],
    ['succeeded', 'failed'],
    ['waiting', 'active'],
    ['queued', 'succeeded'],
    ['failed', 'active'],
  ] as const)('refuses %s -> %s', (from, to) => {
    expect(canTransition(from, to)).toBe(false);
  });

  it('succeeded is final: no state leads out of it', () => {
    for (const to of JOB_STATES) expect(canTransition('succeeded', to)).toBe(false);
  });

  it('knows which states are terminal, retryable and cancellable', () => {
    expect(JOB_STATES.filter(isTerminal)).toEqual(['succeeded', 'failed', 'cancelled', 'skipped']);
    expect(RETRYABLE_STATES).toEqual(['failed', 'cancelled', 'skipped']);
    expect(CANCELLABLE_STATES).toEqual(['waiting', 'queued', 'active']);
  });
});
