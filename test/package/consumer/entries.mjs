/** The package's other entry points, installed with the optional peers: what each exports, by type. */
import * as main from 'nestjs-durable-jobs';
import * as health from 'nestjs-durable-jobs/health';
import * as metrics from 'nestjs-durable-jobs/metrics';
import * as testing from 'nestjs-durable-jobs/testing';
import packageJson from 'nestjs-durable-jobs/package.json' with { type: 'json' };

const kinds = (module, names) => Object.fromEntries(names.map((name) => [name, typeof module[name]]));
console.log(
  JSON.stringify({
    main: kinds(main, ['JobsModule', 'Job', 'OnJobEvent', 'JobQueue', 'JobEvents', 'JobsMonitor']),
    health: kinds(health, ['JobsHealthIndicator']),
    metrics: kinds(metrics, ['JobsMetrics', 'JOBS_METRICS_REGISTRY']),
    testing: kinds(testing, ['ManualClock']),
    version: packageJson.version,
  }),
);
