/**
 * What a docs snippet that is not a whole file may use without declaring it
 * (see docs/contributing/index.md, "Writing the docs"): the services a
 * class would inject, a running job's context, ids, and the example jobs
 * the pages enqueue. The package test writes it into the consumer project
 * as a script (not a module), so these are globals there, and a snippet that
 * imports or declares one of these names shadows it. A string here, not a
 * .d.ts of this repository, so that these globals stay out of its own
 * type-check.
 */
export const SNIPPET_GLOBALS = `type Ctx = import('nestjs-durable-jobs').JobContext;

declare const jobs: import('nestjs-durable-jobs').JobQueue;
declare const batches: import('nestjs-durable-jobs').BatchBuilder;
declare const queues: import('nestjs-durable-jobs').JobQueues;
declare const admin: import('nestjs-durable-jobs').JobsAdmin;
declare const monitor: import('nestjs-durable-jobs').JobsMonitor;
declare const schedules: import('nestjs-durable-jobs').RecurringSchedules;
declare const tester: import('nestjs-durable-jobs/testing').JobsTester;
declare const ctx: Ctx;
declare const manager: import('typeorm').EntityManager;
declare const dataSource: import('typeorm').DataSource;

declare const id: string;
declare const batchId: string;
declare const failedMemberId: string;
declare const importIds: string[];
declare const primaryId: string;
declare const fallbackId: string;
declare const orderId: number;
declare const userId: number;
declare const accountId: number;
declare const tenantId: number;
declare const doc: string;
declare const day: string;
declare const parts: string[];
declare const exportJobId: string;
declare const referenceBatchId: string;

declare class SendReceipt {
  run(payload: { orderId: number }, ctx: Ctx): Promise<void>;
}
declare class ChargeCard {
  run(payload: { orderId: number; cents: number }, ctx: Ctx): Promise<void>;
}
declare class ImportFile {
  run(payload: { file: string }): Promise<void>;
}
declare class NotifyUser {
  run(payload: { userId: number }): Promise<void>;
}
declare class Notify {
  run(payload: { orderId: number }): Promise<void>;
}
declare class NotifyAdmin {
  run(payload: Record<string, unknown>): Promise<void>;
}
declare class Cleanup {
  run(payload: Record<string, unknown>): Promise<void>;
}
declare class Fetch {
  run(payload: { src: string }): Promise<void>;
}
declare class Transform {
  run(payload: { src: string }): Promise<void>;
}
declare class Load {
  run(payload: { src: string }): Promise<void>;
}
declare class ExtractRows {
  run(payload: { day: string }): Promise<void>;
}
declare class Clean {
  run(payload: { day: string }): Promise<void>;
}
declare class Enrich {
  run(payload: { day: string }): Promise<void>;
}
declare class ExtractPart {
  run(payload: { part: string }): Promise<void>;
}
declare class Index {
  run(payload: { day: string }): Promise<void>;
}
declare class Merge {
  run(payload: Record<string, unknown>): Promise<void>;
}
declare class Report {
  run(payload: Record<string, unknown>): Promise<void>;
}
declare class Alert {
  run(payload: { message: string }): Promise<void>;
}
declare class BuildReport {
  run(payload: { tenantId: number }): Promise<void>;
}
declare class SyncAccount {
  run(payload: { accountId: number }): Promise<void>;
}
declare class SendDigest {
  run(payload: { userId: number }): Promise<void>;
}
declare class Reindex {
  run(payload: { doc: string }): Promise<void>;
}
declare class Recompute {
  run(payload: { doc: string }): Promise<void>;
}
`;
