import { JobsError, serializeContext, type StepOptions } from '../model/index.js';

/** A step of a flow or chain as far as its context goes: its key, its options and the keys it waits on. */
export interface ContextNode {
  key: string;
  options: StepOptions;
  after: ReadonlyArray<{ key: string }>;
}

/**
 * Each step's options with the context it is written with: its own, else
 * the one its parents share (a chain's step carries on the one before it),
 * else, for a step without parents, `fallback` (the call's default
 * context, read once for the whole workflow). Parents with different
 * contexts leave the step's unclear: a JobsError asks for its own.
 * `order` lists every key, parents first (topologicalOrder).
 */
export function stepContexts<N extends ContextNode>(
  nodes: readonly N[],
  order: readonly string[],
  fallback: unknown,
  where: string,
): Map<string, StepOptions> {
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  const effective = new Map<string, unknown>();
  const out = new Map<string, StepOptions>();
  for (const key of order) {
    const node = byKey.get(key)!;
    const own = node.options.context;
    const context = own !== undefined ? own : inherited(node, effective, fallback, where);
    effective.set(key, context);
    out.set(
      key,
      own !== undefined || context === undefined
        ? node.options
        : { ...node.options, context: context as StepOptions['context'] },
    );
  }
  return out;
}

function inherited(node: ContextNode, effective: Map<string, unknown>, fallback: unknown, where: string): unknown {
  if (node.after.length === 0) return fallback;
  const first = effective.get(node.after[0]!.key);
  for (const edge of node.after.slice(1)) {
    const other = effective.get(edge.key);
    if (other === first || sameContext(first, other, where)) continue;
    throw new JobsError(
      `${where}: step "${node.key}" waits on "${node.after[0]!.key}" and "${edge.key}", whose contexts differ, so the "context" it would inherit is unclear; nothing was written. ` +
        `Potential fix: give the step its own, e.g. add('${node.key}', Job, payload, { after: [...], context: { tenantId: 't-42' } }).`,
    );
  }
  return first;
}

/** Equal as stored: the same JSON, none and null alike. */
function sameContext(a: unknown, b: unknown, where: string): boolean {
  return (serializeContext(where, a) ?? null) === (serializeContext(where, b) ?? null);
}
