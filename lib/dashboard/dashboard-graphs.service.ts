import { Injectable } from '@nestjs/common';
import { JobsAdmin } from '../admin/jobs-admin.service.js';
import { checkId, JobsNotFoundError, type JobDetail } from '../model/index.js';
import { layoutGraph, type GraphEdgeInput, type GraphLayout, type GraphNodeInput } from './graph-layout.js';

/** The most jobs a flow graph walks to: each is one detail() read. */
const MAX_FLOW_NODES = 40;
/** Past this many members, a batch's graph shows its members grouped by name and state. */
const MAX_BATCH_MEMBERS_DRAWN = 24;

/**
 * The graphs the dashboard draws, laid out here so the page only paints
 * them: a job's flow (its parents and children, walked edge by edge through
 * JobsAdmin.detail()) and a batch (JobsAdmin.batchGraph(): members, their
 * edges, and the then/catch/finally callbacks hanging off the batch).
 */
@Injectable()
export class DashboardGraphs {
  constructor(private readonly admin: JobsAdmin) {}

  async jobGraph(id: string): Promise<GraphLayout> {
    const jobId = checkId('Jobs dashboard: job graph', id);
    const first = await this.admin.detail(jobId);
    if (!first) throw notFound('job', jobId);
    const nodes = new Map<string, GraphNodeInput>();
    const edges = new Map<string, GraphEdgeInput>();
    const visit = (d: JobDetail) => nodes.set(d.id, { id: d.id, label: d.name, state: d.state, kind: 'job' });
    visit(first);
    nodes.get(jobId)!.role = 'this';
    const todo: JobDetail[] = [first];
    const seen = new Set([jobId]);
    let truncated = false;
    while (todo.length) {
      const d = todo.shift()!;
      if (d.moreChildren) truncated = true;
      // A child of ctx.invoke() hangs off the parent that invoked it, its edge marked `invoke`.
      const invoker = d.invokedBy && !seen.has(d.invokedBy) ? await this.admin.detail(d.invokedBy) : null;
      const invokes = [
        ...(invoker
          ? [{ job: { id: invoker.id, name: invoker.name, state: invoker.state }, from: invoker.id, to: d.id }]
          : []),
        ...d.invoked.map((c) => ({ job: c, from: d.id, to: c.id })),
      ];
      const ends = [
        ...d.parents.map((e) => ({ e, from: e.other.id, to: d.id })),
        ...d.children.map((e) => ({ e, from: d.id, to: e.other.id })),
        ...invokes.map(({ job, from, to }) => ({ e: { kind: 'job' as const, on: 'invoke', other: job }, from, to })),
      ];
      for (const { e, from, to } of ends) {
        const other = e.other;
        if (!nodes.has(other.id)) {
          if (nodes.size >= MAX_FLOW_NODES) {
            truncated = true;
            continue;
          }
          nodes.set(other.id, {
            id: other.id,
            label: other.name ?? other.id.slice(0, 8),
            state: other.state,
            kind: e.kind,
          });
        }
        edges.set(`${from}>${to}`, { from, to, on: e.on });
        if (e.kind === 'job' && !seen.has(other.id)) {
          seen.add(other.id);
          const next = await this.admin.detail(other.id);
          if (next) todo.push(next);
        }
      }
    }
    return layoutGraph([...nodes.values()], [...edges.values()], truncated);
  }

  async batchGraph(id: string): Promise<GraphLayout & { batchId: string }> {
    const batchId = checkId('Jobs dashboard: batch graph', id, 'batch');
    const graph = await this.admin.batchGraph(batchId);
    if (!graph) throw notFound('batch', batchId);
    const { batch } = graph;
    const batchNode: GraphNodeInput = {
      id: batch.id,
      label: batch.name ?? 'batch',
      state: batch.state,
      kind: 'batch',
      role: 'batch',
    };
    const members = graph.nodes.filter((n) => n.role === 'member');
    const callbacks = graph.nodes.filter((n) => n.role !== 'member');
    const memberEdges = graph.edges.filter((e) => e.from !== batch.id);
    const callbackEdges = graph.edges.filter((e) => e.from === batch.id);
    const nodes: GraphNodeInput[] = [];
    const edges: GraphEdgeInput[] = [];
    if (members.length <= MAX_BATCH_MEMBERS_DRAWN) {
      nodes.push(
        ...members.map((m) => ({ id: m.id, label: m.name, state: m.state, kind: 'job' as const, role: 'member' })),
      );
      edges.push(...memberEdges);
      // A member no other member waits on feeds the batch's outcome directly.
      const hasMemberChild = new Set(memberEdges.map((e) => e.from));
      for (const m of members) if (!hasMemberChild.has(m.id)) edges.push({ from: m.id, to: batch.id, on: 'member' });
    } else {
      // Too many to draw one by one: one box per job name and state, with its count.
      const groups = new Map<string, GraphNodeInput>();
      for (const m of members) {
        const key = `group:${m.name}:${m.state}`;
        const group = groups.get(key) ?? { id: key, label: m.name, state: m.state, kind: 'group' as const, count: 0 };
        group.count!++;
        groups.set(key, group);
      }
      const sorted = [...groups.values()].sort(
        (a, b) => a.label.localeCompare(b.label) || a.state.localeCompare(b.state),
      );
      nodes.push(...sorted);
      edges.push(...sorted.map((g) => ({ from: g.id, to: batch.id, on: 'member' })));
    }
    nodes.push(batchNode);
    nodes.push(
      ...callbacks.map((c) => ({ id: c.id, label: c.name, state: c.state, kind: 'job' as const, role: c.role })),
    );
    edges.push(...callbackEdges);
    return { batchId: batch.id, ...layoutGraph(nodes, edges) };
  }
}

function notFound(kind: 'job' | 'batch', id: string): JobsNotFoundError {
  return new JobsNotFoundError(
    `Jobs dashboard: no ${kind} ${id}. Potential fix: it may have been deleted or purged; go back to the list.`,
  );
}
