import { NEW_JOB_COLUMNS } from './job-encoding.js';

/*
 * The new job's columns as named parameters of the insert statements (enqueue-statements.ts,
 * workflow-statements.ts): each parameter is named after its column.
 */

/** A column a new job is written with: the name of its parameter in the insert statements. */
export type NewJobColumn = (typeof NEW_JOB_COLUMNS)[number][0];

/** The new job's columns as named parameters, each the value or array literal of its column. */
export type NewJobParams = Readonly<Record<NewJobColumn, unknown>>;

/** The columns in NEW_JOB_COLUMNS' order: the order their parameters are numbered in. */
export const NEW_JOB_PARAMS: readonly NewJobColumn[] = NEW_JOB_COLUMNS.map(([c]) => c);

/**
 * unnestNewJobs with named parameters: `unnest(<id>::uuid[], <name>::text[], …) AS t(id, name, …)`,
 * each column's placeholder taken from `p`; `extra` columns, each a parameter of its own name, follow.
 */
export function unnestNewJobParams<E extends string>(
  p: Readonly<Record<NewJobColumn | E, string>>,
  extra: ReadonlyArray<readonly [E, string]> = [],
): string {
  const columns: ReadonlyArray<readonly [NewJobColumn | E, string]> = [...NEW_JOB_COLUMNS, ...extra];
  const params = columns.map(([c, type]) => `${p[c]}::${type}[]`).join(', ');
  return `unnest(${params}) AS t(${columns.map(([c]) => c).join(', ')})`;
}

/**
 * Values in NEW_JOB_COLUMNS' order (encodeNewJobColumns', encodeNewJobValues') as named
 * parameters: the one place where that order meets the names.
 */
export function newJobParams(values: readonly unknown[]): NewJobParams {
  const params = {} as Record<NewJobColumn, unknown>;
  NEW_JOB_PARAMS.forEach((c, i) => (params[c] = values[i]));
  return params;
}

/**
 * A uniform call's values (encodeUniformJobs') as named parameters: `ids` and `payloads` (array
 * literals), then every other column's shared value; `unique_key` is the keys' array literal of a
 * unique call, null otherwise.
 */
export type UniformJobParams = Readonly<Record<Exclude<NewJobColumn, 'id' | 'payload'> | 'ids' | 'payloads', unknown>>;

/** The parameters of encodeUniformJobs' values, in their order. */
export const UNIFORM_JOB_PARAMS: ReadonlyArray<keyof UniformJobParams> = [
  'ids',
  'payloads',
  ...NEW_JOB_PARAMS.filter((c): c is Exclude<NewJobColumn, 'id' | 'payload'> => c !== 'id' && c !== 'payload'),
];

/** encodeUniformJobs' values as named parameters. */
export function uniformJobParams(values: readonly unknown[]): UniformJobParams {
  const params = {} as Record<keyof UniformJobParams, unknown>;
  UNIFORM_JOB_PARAMS.forEach((c, i) => (params[c] = values[i]));
  return params;
}
