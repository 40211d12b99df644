import { JobsError } from '../model/index.js';

/**
 * Orders the keys of a flow so every parent comes before its children, or
 * throws naming the keys of a cycle. Kahn's algorithm; the cycle is then
 * walked from any key left over.
 */
export function topologicalOrder(parentsByKey: ReadonlyMap<string, readonly string[]>, where: string): string[] {
  const indegree = new Map<string, number>();
  const children = new Map<string, string[]>();
  for (const [key, parents] of parentsByKey) {
    indegree.set(key, parents.length);
    for (const parent of parents) children.set(parent, [...(children.get(parent) ?? []), key]);
  }
  const ready = [...parentsByKey.keys()].filter((k) => indegree.get(k) === 0);
  const order: string[] = [];
  while (ready.length) {
    const key = ready.shift()!;
    order.push(key);
    for (const child of children.get(key) ?? []) {
      const left = indegree.get(child)! - 1;
      indegree.set(child, left);
      if (left === 0) ready.push(child);
    }
  }
  if (order.length === parentsByKey.size) return order;
  const cycle = findCycle(parentsByKey, new Set(order));
  throw new JobsError(
    `${where}: the dependencies form a cycle: ${cycle.join(' -> ')}. Nothing was written. ` +
      `Potential fix: remove one of these "after" edges; a flow must be a DAG.`,
  );
}

function findCycle(parentsByKey: ReadonlyMap<string, readonly string[]>, done: Set<string>): string[] {
  // Every key left has a parent that is left too: walk parents until one repeats.
  let key = [...parentsByKey.keys()].find((k) => !done.has(k))!;
  const path: string[] = [];
  const seenAt = new Map<string, number>();
  while (!seenAt.has(key)) {
    seenAt.set(key, path.length);
    path.push(key);
    key = parentsByKey.get(key)!.find((p) => !done.has(p))!;
  }
  const cycle = path.slice(seenAt.get(key)!).reverse();
  return [...cycle, cycle[0]!];
}
