/**
 * Pausing and resuming a queue, for builds that have it. The admin layer
 * takes it through this token when JobsModule provides one, and otherwise
 * refuses, saying that this build cannot pause queues.
 */
export interface QueueControl {
  pause(queue: string): Promise<unknown>;
  resume(queue: string): Promise<unknown>;
}
export const QUEUE_CONTROL = Symbol('QUEUE_CONTROL');
