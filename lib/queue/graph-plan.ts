import type { DependencyOn, StepOptions } from '../model/index.js';
import type { Edge } from './after-parser.js';
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
export type GraphEdge = Edge;

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

/** The edges between nodes of the same call. */
export function internalEdges(edges: readonly GraphEdge[]): Array<Edge<'key'>> {
  return edges.filter((e): e is Edge<'key'> => 'key' in e);
}
