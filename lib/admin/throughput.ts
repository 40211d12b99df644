import type { Throughput, ThroughputPoint } from '../model/index.js';
import type { ThroughputRow } from '../storage/admin/admin-storage.interface.js';

const MINUTE = 60_000;

interface ThroughputWindow {
  /** The first minute's start. */
  since: Date;
  /** The end of the current minute. */
  until: Date;
  /** Jobs created before this are not read. */
  createdSince: Date;
  minutes: number;
}

/** `minutes` whole minutes ending with the current one; jobs are read from one window further back. */
export function throughputWindow(now: Date, minutes: number): ThroughputWindow {
  const until = Math.floor(now.getTime() / MINUTE) * MINUTE + MINUTE;
  const since = until - minutes * MINUTE;
  return { since: new Date(since), until: new Date(until), createdSince: new Date(since - minutes * MINUTE), minutes };
}

/** Rows per queue and minute as one series per queue, every minute present. */
export function denseThroughput(window: ThroughputWindow, rows: readonly ThroughputRow[]): Throughput {
  const queues: Record<string, ThroughputPoint[]> = {};
  const start = window.since.getTime();
  for (const row of rows) {
    const series = (queues[row.queue] ??= Array.from({ length: window.minutes }, (_, i) => ({
      minute: new Date(start + i * MINUTE),
      succeeded: 0,
      failed: 0,
    })));
    const i = Math.round((new Date(row.minute).getTime() - start) / MINUTE);
    const point = series[i];
    if (!point) continue;
    point.succeeded += row.succeeded;
    point.failed += row.failed;
  }
  return { since: window.since, until: window.until, queues };
}
