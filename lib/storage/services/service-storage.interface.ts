import type { ForgottenService, RateLimit, ScheduleDefinition, ServiceInfo } from '../../model/index.js';
import type { CodeLimits } from '../queues/queue-storage.interface.js';

export type { ForgottenService, ServiceInfo };

/** One instance saying it is alive, and asking whether its build's declarations are in force. */
export interface ServiceCheckIn {
  service: string;
  build: string;
  instanceId: string;
  now: Date;
  /** An instance that beat before this is not alive. */
  aliveSince: Date;
}

export interface CheckInResult {
  /** Whether this build's declarations are the ones in force. */
  owns: boolean;
  /** The build whose declarations are in force. */
  ownerBuild: string;
  /** Whether this check-in made this build the owner. */
  tookOver: boolean;
}

/** What one build of a service declares in code. */
export interface CodeDeclarations {
  service: string;
  build: string;
  /** The @Cron schedules; null leaves the schedules alone. */
  schedules: readonly ScheduleDefinition[] | null;
  /** Jobs other services run (externalJobs): a schedule of theirs without an owner is not this service's. */
  foreignJobs: readonly string[];
  limits: readonly CodeLimits[];
  keys: Readonly<Record<string, RateLimit>>;
  now: Date;
}

/** A declaration another service owns with other values. */
export interface DeclarationConflict {
  kind: 'schedule' | 'queue' | 'job' | 'key';
  /** The schedule's name, the queue, `queue/job` or the key. */
  target: string;
  /** The service that declared it first. */
  service: string;
}

export type DeclarationsResult =
  | { outcome: 'written'; removedSchedules: string[] }
  /** Another build took over meanwhile: nothing was written. */
  | { outcome: 'not-owner' }
  /** Nothing was written. */
  | { outcome: 'conflict'; conflicts: DeclarationConflict[] };

/** Services sharing the schema: their builds, instances, and which build's declarations are in force. */
export interface ServiceStorage {
  checkIn(request: ServiceCheckIn): Promise<CheckInResult>;
  /** Writes a build's declarations if it owns its service's: all of them, or none on a conflict. */
  writeDeclarations(declarations: CodeDeclarations): Promise<DeclarationsResult>;
  checkOut(instanceId: string, now: Date): Promise<void>;
  list(aliveSince: Date): Promise<ServiceInfo[]>;
  forget(service: string): Promise<ForgottenService>;
}

export const SERVICE_STORAGE = Symbol('SERVICE_STORAGE');
