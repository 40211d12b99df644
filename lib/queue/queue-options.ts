import type { EntityManager } from 'typeorm';

export interface EnqueueOptions {
  /** Milliseconds from now before the job may run. */
  delay?: number;
  /** An absolute time before which the job does not run. */
  runAt?: Date;
  /** Higher runs first. */
  priority?: number;
  queue?: string;
  maxAttempts?: number;
  /** Milliseconds one attempt may run. */
  timeout?: number;
  /** Write the job in this TypeORM transaction: it exists only if that commits. */
  manager?: EntityManager;
}

export const QUEUE_SETTINGS = Symbol('QUEUE_SETTINGS');

export interface QueueSettings {
  maxPayloadBytes: number;
}
