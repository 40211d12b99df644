import type * as OpenTelemetry from '@opentelemetry/api';
import {
  JobsError,
  JobTracing,
  type AttemptOutcome,
  type ClaimedJob,
  type SpanIds,
  type TraceCarrier,
} from '../model/index.js';

type Api = typeof OpenTelemetry;

/**
 * Tracing through the OpenTelemetry API (`tracing: true`; @opentelemetry/api
 * is an optional peer, loaded only then). Spans go wherever the app's SDK
 * sends them; without a registered SDK they are no-ops.
 *
 * An enqueue stores the caller's active context (W3C traceparent and
 * tracestate, through the app's propagator) with the job. Each attempt runs
 * in a CONSUMER span `<job name> process` whose parent is that context, so a
 * job appears in the trace of the request that started it, once per
 * attempt; spans the handler starts are its children.
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

  capture(): TraceCarrier | null {
    const carrier: TraceCarrier = {};
    this.api.propagation.inject(this.api.context.active(), carrier);
    return Object.keys(carrier).length ? carrier : null;
  }

  async trace<T>(
    job: ClaimedJob,
    run: (span: SpanIds | null) => Promise<T>,
    outcomeOf: (result: T) => AttemptOutcome | null,
  ): Promise<T> {
    const { api } = this;
    const parent = job.traceContext ? api.propagation.extract(api.ROOT_CONTEXT, job.traceContext) : api.ROOT_CONTEXT;
    const span = this.tracer.startSpan(
      `${job.name} process`,
      {
        kind: api.SpanKind.CONSUMER,
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
