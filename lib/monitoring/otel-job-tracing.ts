import type * as OpenTelemetry from '@opentelemetry/api';
import {
  JobsError,
  JobTracing,
  type AttemptOutcome,
  type ClaimedJob,
  type PublishedJob,
  type SpanIds,
  type TraceCarrier,
} from '../model/index.js';

type Api = typeof OpenTelemetry;

/**
 * Tracing through the OpenTelemetry API (`tracing: true`; @opentelemetry/api
 * is an optional peer, loaded only then). Spans go wherever the app's SDK
 * sends them; without a registered SDK they are no-ops.
 *
 * An enqueue inside a trace publishes each job in a PRODUCER span
 * `<job name> publish`, a child of the caller's active span, and stores that
 * span's context (W3C traceparent and tracestate, through the app's
 * propagator) with the job. Each attempt runs in a CONSUMER span
 * `<job name> process` whose parent is that context and which links to it,
 * so a job appears in the trace of the request that started it, once per
 * attempt; spans the handler starts are its children. An enqueue outside any
 * trace stores nothing, and its job's attempts start traces of their own.
 */
export class OtelJobTracing extends JobTracing {
  readonly enabled = true;

  private constructor(
    private readonly api: Api,
    private readonly tracer: OpenTelemetry.Tracer,
  ) {
    super();
  }

  /** `load` is the import, replaceable so the missing-package error can be tested. */
  static async create(load: () => Promise<Api> = () => import('@opentelemetry/api')): Promise<OtelJobTracing> {
    let api: Api;
    try {
      api = await load();
    } catch (error) {
      throw new JobsError(
        `JobsModule: "tracing: true" needs the package @opentelemetry/api, which could not be loaded (${(error as Error).message}). Potential fix: npm install @opentelemetry/api and register an OpenTelemetry SDK, or leave "tracing" off.`,
      );
    }
    return new OtelJobTracing(api, api.trace.getTracer('nestjs-durable-jobs'));
  }

  capture(job: PublishedJob): TraceCarrier | null {
    const { api } = this;
    const active = api.context.active();
    const caller = api.trace.getSpanContext(active);
    // No trace to join: a publish span here would start a trace per enqueued job, for nobody.
    if (!caller || !api.trace.isSpanContextValid(caller)) return null;
    // A point in time, not the insert's duration: the row carries this span's context, so it is made
    // before the row is written (for a batch of many jobs, in one statement with the rest).
    const span = this.tracer.startSpan(
      `${job.name} publish`,
      {
        kind: api.SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'nestjs-durable-jobs',
          'messaging.operation.type': 'send',
          'messaging.operation.name': 'publish',
          'messaging.destination.name': job.queue,
          'messaging.message.id': job.id,
          'job.name': job.name,
        },
      },
      active,
    );
    const carrier: TraceCarrier = {};
    api.propagation.inject(api.trace.setSpan(active, span), carrier);
    span.end();
    return Object.keys(carrier).length ? carrier : null;
  }

  async trace<T>(
    job: ClaimedJob,
    run: (span: SpanIds | null) => Promise<T>,
    outcomeOf: (result: T) => AttemptOutcome | null,
  ): Promise<T> {
    const { api } = this;
    const parent = job.traceContext ? api.propagation.extract(api.ROOT_CONTEXT, job.traceContext) : api.ROOT_CONTEXT;
    // The link is what messaging conventions join a consumer to its producer by; the parent keeps
    // the attempt inside the enqueuing request's trace as well, for backends that draw only the tree.
    const published = api.trace.getSpanContext(parent);
    const span = this.tracer.startSpan(
      `${job.name} process`,
      {
        kind: api.SpanKind.CONSUMER,
        links: published && api.trace.isSpanContextValid(published) ? [{ context: published }] : [],
        attributes: {
          'messaging.system': 'nestjs-durable-jobs',
          'messaging.operation.type': 'process',
          'messaging.destination.name': job.queue,
          'messaging.message.id': job.id,
          'job.name': job.name,
          'job.attempt': job.attempt,
          'job.max_attempts': job.maxAttempts,
        },
      },
      parent,
    );
    // A span no SDK records (none registered, or sampled out) reaches no backend: no ids to link to.
    const context = span.spanContext();
    const ids =
      span.isRecording() && api.trace.isSpanContextValid(context)
        ? { traceId: context.traceId, spanId: context.spanId }
        : null;
    try {
      const result = await api.context.with(api.trace.setSpan(parent, span), () => run(ids));
      const outcome = outcomeOf(result);
      span.setAttribute('job.outcome', outcome?.kind ?? 'none');
      if (outcome && outcome.kind !== 'succeeded' && outcome.kind !== 'snoozed') {
        span.recordException({ name: outcome.error.name, message: outcome.error.message, stack: outcome.error.stack });
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: outcome.error.message });
      }
      return result;
    } finally {
      span.end();
    }
  }
}
