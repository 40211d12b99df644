import { Inject, Injectable, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { getJobMetadata } from '../discovery/job.decorator.js';
import { Clock, JOB_DEFAULTS, JobsError } from '../model/index.js';
import { JOB_WRITE_RULES, type JobWriteRules } from '../model/index.js';
import { getCronMetadata, type CronMetadata } from './cron.decorator.js';
import { defineSchedule } from './schedule-definition.js';

interface CodeSchedule {
  className: string;
  jobName: string;
  metadata: CronMetadata;
}

/**
 * Finds @Cron on provider classes and checks them at start, so a typo in an
 * expression or a time zone stops the deploy instead of silently never
 * firing. Reads class metadata only, like the jobs explorer.
 */
@Injectable()
export class SchedulesExplorer implements OnModuleInit {
  private found: CodeSchedule[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly clock: Clock,
    @Inject(JOB_WRITE_RULES) private readonly writeRules: JobWriteRules,
  ) {}

  get schedules(): readonly CodeSchedule[] {
    return this.found;
  }

  onModuleInit(): void {
    const byName = new Map<string, CodeSchedule>();
    const seen = new Set<Type>();
    for (const wrapper of this.discovery.getProviders()) {
      const metatype = wrapper.metatype as Type | undefined;
      if (!metatype || wrapper.inject || seen.has(metatype)) continue;
      const crons = getCronMetadata(metatype);
      if (crons.length === 0) continue;
      seen.add(metatype);
      const job = getJobMetadata(metatype);
      if (!job) {
        throw new JobsError(
          `${metatype.name} has @Cron('${crons[0]!.expression}') but no @Job: a schedule needs a job to start. ` +
            `Potential fix: add @Job('some-name') to ${metatype.name} (next to @Cron) and implement run(payload, ctx).`,
        );
      }
      for (const metadata of crons) {
        const name = metadata.options.name ?? job.name;
        const where = `@Cron('${metadata.expression}') on ${metatype.name}`;
        // Only checks here: the definition is rebuilt at bootstrap, with the clock and job options of that moment.
        defineSchedule(
          where,
          { ...metadata.options, name, jobName: job.name, cron: metadata.expression },
          {
            queue: JOB_DEFAULTS.queue,
            priority: JOB_DEFAULTS.priority,
            maxAttempts: JOB_DEFAULTS.maxAttempts,
            timeoutMs: JOB_DEFAULTS.timeout,
          },
          this.writeRules.maxPayloadBytes,
          this.clock.now(),
        );
        const clash = byName.get(name);
        if (clash) {
          throw new JobsError(
            `Schedule name "${name}" is used twice: by @Cron('${clash.metadata.expression}') on ${clash.className} and @Cron('${metadata.expression}') on ${metatype.name}. ` +
              `Potential fix: give each @Cron its own { name: '...' }; a schedule's name identifies its row and its ticks.`,
          );
        }
        byName.set(name, { className: metatype.name, jobName: job.name, metadata });
      }
    }
    this.found = [...byName.values()];
  }
}
