import {
  checkOptionKeys,
  describeValue,
  isDependencyTrigger,
  isUuid,
  JobsError,
  DEPENDENCY_TRIGGER_LIST,
  optionShape,
  type DependencyOn,
} from '../model/index.js';
import type { StepOptions } from '../model/index.js';
import type { JobRef } from './job-factory.js';
import type { ParentRef } from './queue-options.js';

/**
 * What a step of a flow, or a member of a batch, waits on: another step of
 * the same call by its key (`'resize'`, `{ key, on }`), or a job or batch
 * that exists already (`{ job: id, on }`, `{ batch: id, on }`).
 */
export type FlowEdge =
  | string
  | {
      /** The key of the step waited on. */
      key: string;
      /**
       * What that step must do for this one to run: `success` (default), `failure` (failed for good),
       * `any-failure` (one of the `any-failure` parents failed) or `always`.
       */
      on?: DependencyOn;
    }
  | ParentRef;

/** An edge of a graph being written: to another node by key, or to a job or batch by id. */
export type GraphEdge =
  { key: string; on: DependencyOn } | { job: string; on: DependencyOn } | { batch: string; on: DependencyOn };

/** A job of a graph being written: its key in the call, the job, and what it waits on. */
export interface GraphNode {
  key: string;
  job: JobRef;
  payload: unknown;
  options: StepOptions;
  after: GraphEdge[];
}

/** A then/catch/finally job of a batch: it waits on the batch as a whole. */
export interface BatchCallback {
  on: DependencyOn;
  job: JobRef;
  payload: unknown;
  options: StepOptions;
}

/** What one dispatch() writes: its jobs and, but for a chain, the batch record they are members of. */
export interface GraphPlan {
  /** How messages name the call: `flow()`, `chain()`, `batch "import"`. */
  where: string;
  nodes: GraphNode[];
  batch: { name: string | null; allowFailures: boolean; callbacks: BatchCallback[] } | null;
}

const FLOW_EDGE_SHAPE = optionShape<{ key: string; job: string; batch: string; on: DependencyOn }>({
  key: true,
  job: true,
  batch: true,
  on: true,
});

/**
 * A step's `after`, checked: an array of keys, `{ key, on }`, `{ job, on }`
 * or `{ batch, on }` (ids lower-cased, as PostgreSQL returns them). `where`
 * names the call, `example` the fix.
 */
export function parseAfter(where: string, after: unknown, example: string): GraphEdge[] {
  if (!Array.isArray(after)) {
    throw new JobsError(
      `${where}: "after" must be an array of step keys, { key, on }, { job, on } or { batch, on }, got ${describeValue(after)}. Potential fix: ${example}.`,
    );
  }
  const edges: GraphEdge[] = [];
  // By index, not map(): map() skips the holes of a sparse array, which must be refused.
  for (let i = 0; i < after.length; i++) edges.push(parseEdge(where, after[i], i, example));
  return edges;
}

function parseEdge(where: string, e: unknown, i: number, example: string): GraphEdge {
  if (typeof e === 'string') return { key: e, on: 'success' };
  checkOptionKeys(`${where}: "after" entry ${i}`, e, FLOW_EDGE_SHAPE);
  const entry = e !== null && typeof e === 'object' ? (e as Record<string, unknown>) : null;
  const kinds = entry ? (['key', 'job', 'batch'] as const).filter((k) => k in entry) : [];
  const on = entry?.on ?? 'success';
  const bad = (what: string) =>
    new JobsError(
      `${where}: "after" entry ${i} ${what}. Each entry is a step key, { key, on }, { job: id, on } or { batch: id, on }, ` +
        `with "on" one of ${DEPENDENCY_TRIGGER_LIST}. Potential fix: ${example}.`,
    );
  if (kinds.length !== 1)
    throw bad(kinds.length ? `names ${kinds.join(' and ')}: one of them only` : `is ${describeValue(e)}`);
  if (!isDependencyTrigger(on)) throw bad(`has "on" ${describeValue(on)}`);
  const kind = kinds[0]!;
  const value = entry![kind];
  if (kind === 'key') {
    if (typeof value !== 'string') throw bad(`has key ${describeValue(value)}, not a string`);
    return { key: value, on };
  }
  if (!isUuid(value)) throw bad(`has ${kind} ${describeValue(value)}, not an id`);
  const id = value.toLowerCase();
  return kind === 'job' ? { job: id, on } : { batch: id, on };
}

/** The edges between nodes of the same call. */
export function internalEdges(edges: readonly GraphEdge[]): Array<{ key: string; on: DependencyOn }> {
  return edges.filter((e): e is { key: string; on: DependencyOn } => 'key' in e);
}
