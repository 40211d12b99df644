/**
 * A layered drawing of a small DAG, left to right: each node's column is its
 * longest path from a source, rows within a column are ordered by the mean
 * row of their parents (a few sweeps), so edges mostly run straight. The page
 * draws the result as SVG; no library, no layout in the browser.
 */
export interface GraphNodeInput {
  id: string;
  /** What the box says: a job name, a batch name, "12 × succeeded". */
  label: string;
  /** A job or batch state, for the colour. */
  state: string;
  kind: 'job' | 'batch' | 'group';
  /** E.g. 'member', 'then', 'catch', 'finally', 'parent', 'child', 'this'. */
  role?: string;
  /** For a group of batch members: how many. */
  count?: number;
}

export interface GraphEdgeInput {
  from: string;
  to: string;
  /** The trigger: success, failure, always; or 'member' for a member of a batch. */
  on: string;
}

export interface PlacedNode extends GraphNodeInput {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface GraphLayout {
  width: number;
  height: number;
  nodes: PlacedNode[];
  edges: GraphEdgeInput[];
  /** True when the graph was cut short (too many nodes to draw). */
  truncated: boolean;
}

export const NODE_WIDTH = 170;
export const NODE_HEIGHT = 40;
const GAP_X = 60;
const GAP_Y = 14;
const MARGIN = 10;

export function layoutGraph(nodes: GraphNodeInput[], edges: GraphEdgeInput[], truncated = false): GraphLayout {
  const ids = new Set(nodes.map((n) => n.id));
  const kept = edges.filter((e) => ids.has(e.from) && ids.has(e.to) && e.from !== e.to);
  const parents = new Map<string, string[]>(nodes.map((n) => [n.id, []]));
  for (const e of kept) parents.get(e.to)!.push(e.from);

  // Longest path from a source, by relaxation: at most |nodes| rounds, so a cycle cannot hang it.
  const column = new Map<string, number>(nodes.map((n) => [n.id, 0]));
  for (let round = 0; round < nodes.length; round++) {
    let changed = false;
    for (const e of kept) {
      const want = column.get(e.from)! + 1;
      if (want > column.get(e.to)! && want < nodes.length) {
        column.set(e.to, want);
        changed = true;
      }
    }
    if (!changed) break;
  }

  const columns: GraphNodeInput[][] = [];
  for (const node of nodes) (columns[column.get(node.id)!] ??= []).push(node);
  const dense = columns.filter((c) => c && c.length);
  const row = new Map<string, number>();
  const placeRows = () => dense.forEach((c) => c.forEach((n, i) => row.set(n.id, i)));
  placeRows();
  // Barycentre sweeps: each column sorted by its nodes' parents' mean row (stable for ties).
  for (let sweep = 0; sweep < 4; sweep++) {
    for (const col of dense.slice(1)) {
      const weight = (n: GraphNodeInput) => {
        const ps = parents.get(n.id)!;
        return ps.length ? ps.reduce((sum, p) => sum + row.get(p)!, 0) / ps.length : row.get(n.id)!;
      };
      const order = col.map((n, i) => ({ n, w: weight(n), i }));
      order.sort((a, b) => a.w - b.w || a.i - b.i);
      col.splice(0, col.length, ...order.map((o) => o.n));
      placeRows();
    }
  }

  const tallest = Math.max(1, ...dense.map((c) => c.length));
  const height = MARGIN * 2 + tallest * NODE_HEIGHT + (tallest - 1) * GAP_Y;
  const placed: PlacedNode[] = [];
  dense.forEach((col, c) => {
    const colHeight = col.length * NODE_HEIGHT + (col.length - 1) * GAP_Y;
    const top = (height - colHeight) / 2;
    col.forEach((node, r) => {
      placed.push({
        ...node,
        x: MARGIN + c * (NODE_WIDTH + GAP_X),
        y: Math.round(top + r * (NODE_HEIGHT + GAP_Y)),
        width: NODE_WIDTH,
        height: NODE_HEIGHT,
      });
    });
  });
  const width = MARGIN * 2 + dense.length * NODE_WIDTH + Math.max(0, dense.length - 1) * GAP_X;
  return { width, height, nodes: placed, edges: kept, truncated };
}
