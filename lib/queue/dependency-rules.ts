import type { DependencyOn } from './queue-options.js';

/** Whether a parent that ended in `outcome` lets a child waiting with `on` run. */
export function triggerMet(on: DependencyOn, outcome: string): boolean {
  if (on === 'always') return true;
  if (on === 'success') return outcome === 'succeeded';
  return outcome === 'failed';
}
