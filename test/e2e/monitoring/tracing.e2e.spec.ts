import type { INestApplication } from '@nestjs/common';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Job, JobQueue, JobsError, type JobContext, type JobHandler } from 'nestjs-durable-jobs';
import { OtelJobTracing } from '../../../lib/monitoring/otel-job-tracing.js';
import { dropSchemas, sql, uniqueSchema } from '../../support/database.js';
import { startJobsApp } from '../../support/jobs-app.js';
import { waitFor } from '../../support/wait.js';

// An SDK as an app would register it: spans of the handler nest under the attempt's span.
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();
trace.setGlobalTracerProvider(provider);
context.setGlobalContextManager(contextManager);
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const tracer = trace.getTracer('test');

@Job('traced', { maxAttempts: 2, backoff: { type: 'fixed', delay: 0 } })
class Traced implements JobHandler<{ failFirst: boolean }> {
  async run({ failFirst }: { failFirst: boolean }, ctx: JobContext) {
    await tracer.startActiveSpan('inside the handler', async (span) => {
      await new Promise((r) => setTimeout(r, 5));
      span.end();
    });
    if (failFirst && ctx.attempt === 1) throw new Error('first attempt fails');
  }
}

const schema = uniqueSchema('tracing');
const storedContext = async (id: string) =>
  (
    await sql<{ trace_context: Record<string, string> | null }>(
      `SELECT trace_context FROM "${schema}".job WHERE id = $1`,
      [id],
    )
  )[0]!.trace_context;
const apps: INestApplication[] = [];

async function boot(tracing: boolean) {
  const app = await startJobsApp(schema, { tracing, worker: { pollInterval: 100 } }, { providers: [Traced] });
  apps.push(app);
  return app;
}

afterAll(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  await dropSchemas(schema);
  contextManager.disable();
  await provider.shutdown();
});

afterEach(() => exporter.reset());

describe('tracing: true (OpenTelemetry)', () => {
  let jobs: JobQueue;
  beforeAll(async () => {
    jobs = (await boot(true)).get(JobQueue);
  });

  it("the enqueue is a PRODUCER span in the request's trace; each attempt a CONSUMER span under it and linked to it; the handler's spans are its children; a failed attempt is an error", async () => {
    const request = tracer.startSpan('POST /orders');
    const { id } = await context.with(trace.setSpan(context.active(), request), () =>
      jobs.enqueue(Traced, { failFirst: true }),
    );
    request.end();
    await waitFor('the job to succeed on its second attempt', async () => (await jobs.get(id))?.state === 'succeeded');
    await waitFor('both attempts to end their spans', () => exporter.getFinishedSpans().length >= 6);

    const spans = exporter.getFinishedSpans();
    const published = spans.filter((s) => s.name === 'traced publish');
    expect(published).toHaveLength(1);
    const producer = published[0]!;
    expect(producer.kind).toBe(SpanKind.PRODUCER);
    expect(producer.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(producer.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(producer.attributes).toMatchObject({
      'messaging.system': 'nestjs-durable-jobs',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'default',
      'messaging.message.id': id,
      'job.name': 'traced',
    });
    // The job row carries the W3C context of its publish span.
    expect((await storedContext(id))?.traceparent).toBe(
      `00-${producer.spanContext().traceId}-${producer.spanContext().spanId}-01`,
    );
    const attempts = spans
      .filter((s) => s.name === 'traced process')
      .sort((a, b) => Number(a.attributes['job.attempt']) - Number(b.attributes['job.attempt']));
    expect(attempts).toHaveLength(2);
    for (const span of attempts) {
      expect(span.kind).toBe(SpanKind.CONSUMER);
      expect(span.spanContext().traceId).toBe(request.spanContext().traceId);
      expect(span.parentSpanContext?.spanId).toBe(producer.spanContext().spanId);
      expect(span.links.map((l) => l.context.spanId)).toEqual([producer.spanContext().spanId]);
      expect(span.attributes).toMatchObject({
        'messaging.system': 'nestjs-durable-jobs',
        'messaging.destination.name': 'default',
        'messaging.message.id': id,
        'job.name': 'traced',
      });
    }
    expect(attempts[0]!.attributes['job.outcome']).toBe('retry');
    expect(attempts[0]!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'first attempt fails' });
    expect(attempts[0]!.events.map((e) => e.name)).toEqual(['exception']);
    expect(attempts[1]!.attributes['job.outcome']).toBe('succeeded');
    expect(attempts[1]!.status.code).toBe(SpanStatusCode.UNSET);
    const inner = spans.filter((s) => s.name === 'inside the handler');
    expect(inner.map((s) => s.parentSpanContext?.spanId).sort()).toEqual(
      attempts.map((a) => a.spanContext().spanId).sort(),
    );
  });

  it('a job enqueued outside any trace publishes no span, stores no context, and starts a trace of its own', async () => {
    const { id } = await jobs.enqueue(Traced, { failFirst: false });
    expect(await storedContext(id)).toBeNull();
    await waitFor('the job to succeed', async () => (await jobs.get(id))?.state === 'succeeded');
    await waitFor('its span to end', () => exporter.getFinishedSpans().some((s) => s.name === 'traced process'));
    const [span] = exporter.getFinishedSpans().filter((s) => s.name === 'traced process');
    expect(span!.parentSpanContext).toBeUndefined();
    expect(span!.links).toEqual([]);
    expect(exporter.getFinishedSpans().filter((s) => s.name === 'traced publish')).toEqual([]);
  });

  it('each job of an enqueueMany or a flow is published in a span of its own, all children of the caller', async () => {
    const request = tracer.startSpan('POST /imports');
    const results = await context.with(trace.setSpan(context.active(), request), async () => [
      ...(await jobs.enqueueMany([
        { job: Traced, payload: { failFirst: false } },
        { job: Traced, payload: { failFirst: false } },
      ])),
      ...Object.values(
        (await jobs.flow().add('a', Traced, { failFirst: false }).add('b', 'traced', { failFirst: false }).dispatch())
          .ids,
      ).map((id) => ({ id })),
    ]);
    request.end();
    const published = exporter.getFinishedSpans().filter((s) => s.name === 'traced publish');
    expect(published.map((s) => s.attributes['messaging.message.id']).sort()).toEqual(results.map((r) => r.id).sort());
    for (const span of published) expect(span.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    for (const { id } of results) {
      const stored = (await storedContext(id))?.traceparent;
      const own = published.find((s) => s.attributes['messaging.message.id'] === id)!;
      expect(stored).toContain(own.spanContext().spanId);
    }
    await waitFor('the four jobs to succeed', async () =>
      (await Promise.all(results.map(async ({ id }) => (await jobs.get(id))?.state))).every((s) => s === 'succeeded'),
    );
    await waitFor(
      'their attempts to end their spans',
      () => exporter.getFinishedSpans().filter((s) => s.name === 'traced process').length === results.length,
    );
  });
});

describe('tracing off (the default)', () => {
  it('stores no trace context and starts no span, even inside an active trace', async () => {
    for (const app of apps.splice(0)) await app.close();
    const jobs = (await boot(false)).get(JobQueue);
    const request = tracer.startSpan('POST /orders');
    const { id } = await context.with(trace.setSpan(context.active(), request), () =>
      jobs.enqueue(Traced, { failFirst: false }),
    );
    request.end();
    await waitFor('the job to succeed', async () => (await jobs.get(id))?.state === 'succeeded');
    expect(
      exporter
        .getFinishedSpans()
        .map((s) => s.name)
        .sort(),
    ).toEqual(['POST /orders', 'inside the handler']);
  });
});

describe('tracing: true without @opentelemetry/api', () => {
  it('fails with the package and the fix named', async () => {
    const missing = () => Promise.reject(new Error("Cannot find package '@opentelemetry/api'"));
    const error = await OtelJobTracing.create(missing).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobsError);
    expect((error as Error).message).toMatch(
      /"tracing: true" needs the package @opentelemetry\/api.*Cannot find package.*Potential fix: npm install @opentelemetry\/api/,
    );
  });
});
