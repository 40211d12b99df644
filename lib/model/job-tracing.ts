import type { AttemptOutcome, ClaimedJob } from './records.js';

/** W3C trace context headers (traceparent, tracestate) stored with a job. */
export type TraceCarrier = Record<string, string>;

/** The ids of the span an attempt runs in, as a tracing backend knows it. */
export interface SpanIds {
  traceId: string;
  spanId: string;
}

/** The job an enqueue is writing, as tracing names its publish. */
export interface PublishedJob {
  /** The new job's id. */
  id: string;
  /** Its name, as in `@Job(name)`. */
  name: string;
  /** Its queue. */
  queue: string;
}

/**
 * Where tracing plugs in: the queue captures a trace context into each new
 * job (the publish of the job, in the caller's trace), and the worker runs
 * each attempt inside a span that continues it. The default does nothing;
 * `tracing: true` installs the OpenTelemetry one.
 */
export abstract class JobTracing {
  abstract readonly enabled: boolean;
  /** The trace context to store with the new job `job`; null when the caller is in no trace. */
  abstract capture(job: PublishedJob): TraceCarrier | null;
  /**
   * Runs one attempt inside a span continuing the job's stored context, and
   * ends the span with the attempt's outcome (null: no outcome, the job was
   * handed back or lost). `run` gets the span's ids (null when no SDK
   * records it), so they can be stored with the attempt.
   */
  abstract trace<T>(
    job: ClaimedJob,
    run: (span: SpanIds | null) => Promise<T>,
    outcomeOf: (result: T) => AttemptOutcome | null,
  ): Promise<T>;
}

export class NoTracing extends JobTracing {
  readonly enabled = false;
  capture(): TraceCarrier | null {
    return null;
  }
  trace<T>(_job: ClaimedJob, run: (span: SpanIds | null) => Promise<T>): Promise<T> {
    return run(null);
  }
}
