/** How often an app instance says it is alive and looks whether its build should take over its service's declarations. */
export const SERVICE_CHECK_IN_MS = 10_000;
/** An instance silent this long is gone: an older build may then take its service's declarations back. */
export const SERVICE_INSTANCE_ALIVE_MS = 3 * SERVICE_CHECK_IN_MS;

/** One build of a service: what one version of its code declares, identified by a digest of it. */
export interface ServiceBuildInfo {
  /** The digest of the build's declarations (schedules and limits). */
  build: string;
  /** When an instance of this build first started. */
  firstSeenAt: Date;
  /** Its instances alive now. */
  instances: number;
}

/** A service (JobsModule's `service`) that shares the schema, as `JobsAdmin.services()` returns it. */
export interface ServiceInfo {
  /** The service's name (JobsModule's `service`). */
  service: string;
  /** The build whose declarations are in force. */
  ownerBuild: string;
  /** Since when they are. */
  since: Date;
  /** Its builds, newest first. */
  builds: ServiceBuildInfo[];
  /** Code-defined schedules it owns. */
  schedules: number;
  /** Queue, job and keyed limits its code declares. */
  limits: number;
}

/** What `JobsAdmin.forgetService()` released. */
export interface ForgottenService {
  /** Whether the service was known at all. */
  known: boolean;
  /** Schedules that lost their owner. */
  schedules: number;
  /** Queue, job and keyed limits that lost their owner. */
  limits: number;
}
