import { JobsError } from './errors.js';
import {
  JOB_EVENT_NAMES,
  type JobEventFilter,
  type JobEventListenerFilter,
  type JobEventName,
} from './job-event-types.js';
import { optionShape } from './option-keys.js';
import { checkName, checkOptions, describeValue } from './validation.js';

/** The keys a job event filter may have. */
const JOB_EVENT_FILTER_SHAPE = optionShape<JobEventFilter>({ queue: true, name: true });

/** The keys an @OnJobEvent filter may have. */
export const JOB_EVENT_LISTENER_FILTER_SHAPE = optionShape<JobEventListenerFilter>({
  queue: true,
  name: true,
  label: true,
});

/** Event names as given to `@OnJobEvent` or `JobEvents.on`: one or a non-empty array of known names. */
export function checkJobEventNames(where: string, value: unknown): JobEventName[] {
  const names = Array.isArray(value) ? (value as unknown[]) : [value];
  const known = JOB_EVENT_NAMES.map((n) => `'${n}'`).join(', ');
  if (names.length === 0) {
    throw new JobsError(`${where}: no event given. Potential fix: one of ${known}, or an array of them.`);
  }
  for (const name of names) {
    if (!JOB_EVENT_NAMES.includes(name as JobEventName)) {
      throw new JobsError(`${where}: unknown job event ${describeValue(name)}. Potential fix: one of ${known}.`);
    }
  }
  return [...new Set(names as JobEventName[])];
}

export function checkJobEventFilter(where: string, filter: unknown, shape = JOB_EVENT_FILTER_SHAPE): void {
  const f = checkOptions(
    where,
    filter as JobEventFilter | undefined,
    "{ queue: 'emails', name: 'send-receipt' }",
    shape,
  );
  if (f?.queue !== undefined) checkName(where, 'queue', f.queue, 'emails');
  if (f?.name !== undefined) checkName(where, 'name', f.name, 'send-receipt');
}
