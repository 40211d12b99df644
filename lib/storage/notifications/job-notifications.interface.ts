import type { JobNotification } from '../sql/notification-topics.js';

export type { JobNotification, NotificationTopic } from '../sql/notification-topics.js';

export interface NotificationSubscriber {
  /** A notification on the schema's channel, already decoded. */
  onNotification?(event: JobNotification): void;
  /**
   * The listening connection was made again after a loss: whatever was sent
   * meanwhile is gone, so look for work (or changes) directly.
   */
  onReconnect?(): void;
}

/**
 * Wake-ups from the database: one listening connection per instance, shared
 * by the worker and the scheduler. A NOTIFY sent inside a transaction arrives
 * only after COMMIT, which is exactly when the change becomes visible.
 */
export abstract class JobNotifications {
  /** Returns the unsubscribe function. */
  abstract subscribe(subscriber: NotificationSubscriber): () => void;
  /** Starts listening (counted: each start needs its stop). */
  abstract start(): Promise<void>;
  abstract stop(): Promise<void>;
  /** False when this instance cannot LISTEN (a transaction pooler without `directConnection`): it polls. */
  abstract readonly listening: boolean;
  /** Whether the listening connection is open now. */
  abstract readonly connected: boolean;
}
