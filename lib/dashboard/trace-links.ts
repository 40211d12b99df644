import type { JobExecution } from '../model/index.js';

/** Where an attempt's trace id goes in `traceUrl`. */
export const TRACE_ID = '{traceId}';
const SPAN_ID = '{spanId}';

/** `template` with the ids in place, each URL-encoded so that no id can change the URL's shape. */
export function fillTraceUrl(template: string, traceId: string, spanId: string | null): string {
  return template
    .replaceAll(TRACE_ID, encodeURIComponent(traceId))
    .replaceAll(SPAN_ID, encodeURIComponent(spanId ?? ''));
}

/** An attempt as the dashboard's JSON shows it: with the link to its trace, when it has one and a template is set. */
type LinkedExecution = JobExecution & { traceUrl: string | null };

/**
 * A job's attempts with their trace links. The link is made here rather
 * than by the page, so the JSON and the page show the same URL and the
 * template stays one checked string on the server.
 */
export function withTraceLinks<T extends { executions: JobExecution[] }>(
  job: T,
  template: string | null,
): Omit<T, 'executions'> & { executions: LinkedExecution[] } {
  return {
    ...job,
    executions: job.executions.map((e) => ({
      ...e,
      traceUrl: template && e.traceId ? fillTraceUrl(template, e.traceId, e.spanId) : null,
    })),
  };
}
