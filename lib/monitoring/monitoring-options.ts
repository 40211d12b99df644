export interface MonitoringOptions {
  /**
   * A running worker whose last heartbeat is older than this counts as not
   * alive, in ms. Workers beat every third of their lease, so the default is
   * this instance's `worker.lease` (three missed beats).
   */
  staleAfter: number;
}

export const MONITORING_OPTIONS = Symbol('MONITORING_OPTIONS');
