import {
  checkOptionKeys,
  describeValue,
  isDependencyTrigger,
  isUuid,
  JobsError,
  DEPENDENCY_TRIGGER_LIST,
  optionShape,
  type DependencyOn,
  type OptionShape,
} from '../model/index.js';
import { PARENT_REF_SHAPE } from './queue-options.js';

/** What an entry of `after` may name: a step of the same call by key, or a job or batch by id. */
export type EdgeKind = 'key' | 'job' | 'batch';

/** An entry of `after`, checked: the one parent it names and the outcome of it waited for. */
export type Edge<K extends EdgeKind = EdgeKind> = {
  [P in K]: { [Q in P]: string } & { on: DependencyOn };
}[K];

/** What is wrong with one entry of `after`, for its form to word. */
export type EntryFault =
  | { fault: 'no-parent'; entry: unknown }
  | { fault: 'several'; kinds: EdgeKind[] }
  | { fault: 'key'; value: unknown }
  | { fault: 'id'; kind: 'job' | 'batch'; value: unknown }
  | { fault: 'on'; kind: EdgeKind; value: unknown };

/**
 * The part of `after` that differs between the calls that take it: what it
 * may name, how a bare string reads, and the words of each refusal, which
 * users' code and tests match on.
 */
export interface AfterForm<K extends EdgeKind> {
  /** How messages name the call. */
  where: string;
  /** The kinds an entry may name. */
  kinds: readonly K[];
  /** The keys an entry object may have. */
  shape: OptionShape;
  /**
   * The entries `after` stands for, or null when it is not a list this
   * form takes; a bare string is read here when it stands for a list.
   */
  entries(after: unknown): readonly unknown[] | null;
  /** A bare string entry as the edge it stands for, or null when this form refuses it. */
  bareEntry(entry: string): Edge<K> | null;
  notList(after: unknown): JobsError;
  badEntry(i: number, fault: EntryFault): JobsError;
}

/**
 * A job's parents as `after` gives them, checked against `form`: each
 * entry names one parent of a kind the form takes, ids are UUIDs (returned
 * lower-cased), keys are strings, and `on` (default `success`) is a trigger.
 */
export function parseAfter<K extends EdgeKind>(after: unknown, form: AfterForm<K>): Array<Edge<K>> {
  const list = form.entries(after);
  if (list === null) throw form.notList(after);
  const edges: Array<Edge<K>> = [];
  // By index, not map(): map() skips the holes of a sparse array, and a missing entry must be refused.
  for (let i = 0; i < list.length; i++) edges.push(parseEntry(list[i], i, form));
  return edges;
}

function parseEntry<K extends EdgeKind>(e: unknown, i: number, form: AfterForm<K>): Edge<K> {
  if (typeof e === 'string') {
    const edge = form.bareEntry(e);
    if (edge) return edge;
  }
  checkOptionKeys(`${form.where}: "after" entry ${i}`, e, form.shape);
  const entry = e !== null && typeof e === 'object' ? (e as Record<string, unknown>) : null;
  const kinds = entry ? form.kinds.filter((k) => k in entry) : [];
  // With two, one would be waited on and the other dropped without a word.
  if (kinds.length > 1) throw form.badEntry(i, { fault: 'several', kinds });
  const kind = kinds[0];
  if (kind === undefined) throw form.badEntry(i, { fault: 'no-parent', entry: e });
  const value = entry![kind];
  let ref: string;
  if (kind === 'key') {
    if (typeof value !== 'string') throw form.badEntry(i, { fault: 'key', value });
    ref = value;
  } else {
    // Ids come back from PostgreSQL in lower case, and the parents are looked up by them.
    if (!isUuid(value)) throw form.badEntry(i, { fault: 'id', kind: kind as 'job' | 'batch', value });
    ref = value.toLowerCase();
  }
  const on = entry!.on ?? 'success';
  if (!isDependencyTrigger(on)) throw form.badEntry(i, { fault: 'on', kind, value: on });
  return { [kind]: ref, on } as Edge<K>;
}

/**
 * enqueue()'s `after`: a job's id, or a non-empty list of `{ job, on }` and
 * `{ batch, on }`; a string in the list is refused, since a key means
 * nothing outside a flow or batch.
 */
export function enqueueAfterForm(jobName: string): AfterForm<'job' | 'batch'> {
  const where = `enqueue('${jobName}')`;
  return {
    where,
    kinds: ['job', 'batch'],
    shape: PARENT_REF_SHAPE,
    entries: (after) =>
      typeof after === 'string' ? [{ job: after }] : Array.isArray(after) && after.length > 0 ? after : null,
    bareEntry: () => null,
    notList: (after) =>
      new JobsError(
        `${where}: "after" must be a job id or a non-empty list of { job | batch, on }, got ${describeValue(after)}. Potential fix: after: parentId.`,
      ),
    badEntry: (i, f) => {
      if (f.fault === 'several') {
        return new JobsError(
          `${where}: "after" entry ${i} names both a job and a batch. Potential fix: one entry each, after: [{ job: jobId }, { batch: batchId }].`,
        );
      }
      if (f.fault === 'on') {
        return new JobsError(
          `${where}: "on" of "after" entry ${i} must be ${DEPENDENCY_TRIGGER_LIST}, got ${describeValue(f.value)}. Potential fix: { ${f.kind}: id, on: 'always' }.`,
        );
      }
      const got =
        f.fault === 'id' ? `${f.kind} ${describeValue(f.value)}` : describeValue(f.fault === 'key' ? f.value : f.entry);
      return new JobsError(
        `${where}: "after" entry ${i} is not { job: id } or { batch: id } with a valid id (got ${got}). Potential fix: { job: '<uuid>', on: 'success' }.`,
      );
    },
  };
}

const GRAPH_EDGE_SHAPE = optionShape<{ key: string; job: string; batch: string; on: DependencyOn }>({
  key: true,
  job: true,
  batch: true,
  on: true,
});

/**
 * A flow step's or a batch member's `after`: a list (empty for none) of
 * step keys, `{ key, on }`, `{ job, on }` and `{ batch, on }`. `where` names
 * the call, `example` the fix.
 */
export function graphAfterForm(where: string, example: string): AfterForm<EdgeKind> {
  const bad = (i: number, what: string) =>
    new JobsError(
      `${where}: "after" entry ${i} ${what}. Each entry is a step key, { key, on }, { job: id, on } or { batch: id, on }, ` +
        `with "on" one of ${DEPENDENCY_TRIGGER_LIST}. Potential fix: ${example}.`,
    );
  return {
    where,
    kinds: ['key', 'job', 'batch'],
    shape: GRAPH_EDGE_SHAPE,
    entries: (after) => (Array.isArray(after) ? after : null),
    bareEntry: (key) => ({ key, on: 'success' }),
    notList: (after) =>
      new JobsError(
        `${where}: "after" must be an array of step keys, { key, on }, { job, on } or { batch, on }, got ${describeValue(after)}. Potential fix: ${example}.`,
      ),
    badEntry: (i, f) => {
      switch (f.fault) {
        case 'no-parent':
          return bad(i, `is ${describeValue(f.entry)}`);
        case 'several':
          return bad(i, `names ${f.kinds.join(' and ')}: one of them only`);
        case 'key':
          return bad(i, `has key ${describeValue(f.value)}, not a string`);
        case 'id':
          return bad(i, `has ${f.kind} ${describeValue(f.value)}, not an id`);
        case 'on':
          return bad(i, `has "on" ${describeValue(f.value)}`);
      }
    },
  };
}
