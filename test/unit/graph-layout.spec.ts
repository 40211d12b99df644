import fc from 'fast-check';
import {
  layoutGraph,
  NODE_HEIGHT,
  NODE_WIDTH,
  type GraphEdgeInput,
  type GraphLayout,
  type GraphNodeInput,
  type PlacedNode,
} from '../../lib/dashboard/graph-layout.js';

/** The drawing's spacing, as the page shows it: boxes 170 × 40, columns 60 apart, rows 14, a margin of 10. */
const MARGIN = 10;
const COLUMN = NODE_WIDTH + 60;
const ROW = NODE_HEIGHT + 14;

const node = (id: string): GraphNodeInput => ({ id, label: id, state: 'succeeded', kind: 'job' });
const edge = (from: string, to: string, on = 'success'): GraphEdgeInput => ({ from, to, on });

function layout(ids: string[], edges: Array<[string, string]>, truncated?: boolean): GraphLayout {
  return layoutGraph(
    ids.map(node),
    edges.map(([from, to]) => edge(from, to)),
    truncated,
  );
}

function placed(g: GraphLayout, id: string): PlacedNode {
  const found = g.nodes.find((n) => n.id === id);
  if (!found) throw new Error(`${id} is not in the layout`);
  return found;
}

/** Each node's column, by id. */
function columns(g: GraphLayout): Record<string, number> {
  return Object.fromEntries(g.nodes.map((n) => [n.id, (n.x - MARGIN) / COLUMN]));
}

/** Ids top to bottom in each column, left to right. */
function rows(g: GraphLayout): string[][] {
  const byColumn: string[][] = [];
  for (const n of [...g.nodes].sort((a, b) => a.y - b.y)) (byColumn[(n.x - MARGIN) / COLUMN] ??= []).push(n.id);
  return byColumn;
}

/** Pairs of boxes that share any point, and boxes that leave the drawing or its margin. */
function collisions(g: GraphLayout): string[] {
  const found: string[] = [];
  g.nodes.forEach((a, i) => {
    if (a.x < MARGIN || a.y < MARGIN || a.x + a.width > g.width - MARGIN || a.y + a.height > g.height - MARGIN) {
      found.push(`${a.id} outside ${g.width} × ${g.height}`);
    }
    for (const b of g.nodes.slice(i + 1)) {
      const apart = a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
      if (!apart) found.push(`${a.id} overlaps ${b.id}`);
    }
  });
  return found;
}

describe('layoutGraph', () => {
  it('puts a chain in one row, a column per step, and sizes the drawing to it', () => {
    const g = layout(
      ['a', 'b', 'c'],
      [
        ['a', 'b'],
        ['b', 'c'],
      ],
    );
    expect(g.nodes.map(({ id, x, y, width, height }) => ({ id, x, y, width, height }))).toEqual([
      { id: 'a', x: 10, y: 10, width: 170, height: 40 },
      { id: 'b', x: 240, y: 10, width: 170, height: 40 },
      { id: 'c', x: 470, y: 10, width: 170, height: 40 },
    ]);
    expect([g.width, g.height]).toEqual([650, 60]);
  });

  it('places a node by its longest path from a source, not its shortest', () => {
    // d is a's child and b's grandchild: it goes after b, in column 2.
    const g = layout(
      ['a', 'b', 'c', 'd'],
      [
        ['a', 'd'],
        ['a', 'b'],
        ['b', 'd'],
        ['a', 'c'],
      ],
    );
    expect(columns(g)).toEqual({ a: 0, b: 1, c: 1, d: 2 });
    expect(rows(g)).toEqual([['a'], ['b', 'c'], ['d']]);
  });

  it('centres a shorter column on the tallest one', () => {
    const g = layout(
      ['a', 'b', 'c'],
      [
        ['a', 'b'],
        ['a', 'c'],
      ],
    );
    expect(g.height).toBe(2 * MARGIN + 2 * NODE_HEIGHT + 14);
    expect([placed(g, 'b').y, placed(g, 'c').y]).toEqual([MARGIN, MARGIN + ROW]);
    expect(placed(g, 'a').y).toBe((g.height - NODE_HEIGHT) / 2);
  });

  it("orders a column by its nodes' parents' rows, so that edges do not cross", () => {
    // Listed crosswise: c2 (child of p2) before c1 (child of p1).
    const g = layout(
      ['p1', 'p2', 'c2', 'c1', 'g2', 'g1'],
      [
        ['p1', 'c1'],
        ['p2', 'c2'],
        ['c2', 'g2'],
        ['c1', 'g1'],
      ],
    );
    expect(rows(g)).toEqual([
      ['p1', 'p2'],
      ['c1', 'c2'],
      ['g1', 'g2'],
    ]);
  });

  it('keeps the order nodes came in where their parents do not decide it, the sources among them', () => {
    const g = layout(
      ['s2', 's1', 'y', 'x'],
      [
        ['s2', 'y'],
        ['s2', 'x'],
      ],
    );
    expect(rows(g)).toEqual([
      ['s2', 's1'],
      ['y', 'x'],
    ]);
  });

  it('drops edges to itself or to a node it was not given, and draws the rest', () => {
    const g = layoutGraph(
      [node('a'), node('b')],
      [edge('a', 'a'), edge('a', 'ghost'), edge('ghost', 'b'), edge('a', 'b', 'always')],
    );
    expect(g.edges).toEqual([edge('a', 'b', 'always')]);
    expect(columns(g)).toEqual({ a: 0, b: 1 });
  });

  it('ends on a cycle, each node placed once in a column short of the node count', () => {
    const g = layout(
      ['a', 'b', 'c'],
      [
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'a'],
      ],
    );
    expect(columns(g)).toEqual({ a: 0, b: 1, c: 2 });
    const pair = layout(
      ['a', 'b'],
      [
        ['b', 'a'],
        ['a', 'b'],
      ],
    );
    expect(columns(pair)).toEqual({ a: 1, b: 0 });
    expect(collisions(g)).toEqual([]);
  });

  it('draws nothing for no nodes, in a drawing of its margins and one row', () => {
    expect(layoutGraph([], [])).toEqual({
      width: 2 * MARGIN,
      height: 2 * MARGIN + NODE_HEIGHT,
      nodes: [],
      edges: [],
      truncated: false,
    });
  });

  it('keeps what each box says and whether the graph was cut short', () => {
    const group: GraphNodeInput = { id: 'g', label: 'step', state: 'failed', kind: 'group', role: 'member', count: 12 };
    const g = layoutGraph([group], [], true);
    expect(g.truncated).toBe(true);
    expect(g.nodes).toEqual([{ ...group, x: MARGIN, y: MARGIN, width: NODE_WIDTH, height: NODE_HEIGHT }]);
    expect(layout(['a'], []).truncated).toBe(false);
  });

  /**
   * Up to 14 nodes and 30 edges between them, by index; `forward` turns every edge from the lower
   * index to the higher and leaves out edges to themselves, which makes a DAG.
   */
  const graphs = (forward: boolean) =>
    fc.integer({ min: 1, max: 14 }).chain((n) =>
      fc.record({
        n: fc.constant(n),
        edges: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 30 }).map((pairs) =>
          pairs
            .filter(([a, b]) => !forward || a !== b)
            .map(([a, b]) => (forward && a > b ? [b, a] : [a, b]))
            .map(([a, b]) => [`n${a}`, `n${b}`] as [string, string]),
        ),
      }),
    );
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `n${i}`);

  it('lays out any DAG with every edge running right, each node in its longest-path column, no box over another', () => {
    fc.assert(
      fc.property(graphs(true), ({ n, edges }) => {
        const g = layout(ids(n), edges);
        expect(g.nodes.map((x) => x.id).sort()).toEqual(ids(n).sort());
        // The reference: longest path by index order, which is a topological order here.
        const depth = new Map(ids(n).map((id) => [id, 0]));
        for (const id of ids(n)) {
          for (const [from, to] of edges) if (to === id) depth.set(id, Math.max(depth.get(id)!, depth.get(from)! + 1));
        }
        expect(columns(g)).toEqual(Object.fromEntries(depth));
        for (const e of g.edges) expect(placed(g, e.to).x).toBeGreaterThan(placed(g, e.from).x);
        expect(collisions(g)).toEqual([]);
        expect(g.width).toBe(2 * MARGIN + (Math.max(...depth.values()) + 1) * COLUMN - (COLUMN - NODE_WIDTH));
      }),
      { numRuns: 300 },
    );
  });

  it('lays out any graph, cycles included, with each node once and no box over another', () => {
    fc.assert(
      fc.property(graphs(false), ({ n, edges }) => {
        const g = layout(ids(n), edges);
        expect(g.nodes.map((x) => x.id).sort()).toEqual(ids(n).sort());
        for (const column of Object.values(columns(g))) expect(column).toBeLessThan(n);
        expect(collisions(g)).toEqual([]);
        expect(g.edges.every((e) => e.from !== e.to)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
