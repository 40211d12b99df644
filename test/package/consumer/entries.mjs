/** The package's other entry points, installed with the optional peers: what each exports, by type. */
import * as main from 'nestjs-durable-jobs';
import * as dashboard from 'nestjs-durable-jobs/dashboard';
import * as health from 'nestjs-durable-jobs/health';
import * as metrics from 'nestjs-durable-jobs/metrics';
import * as testing from 'nestjs-durable-jobs/testing';
import packageJson from 'nestjs-durable-jobs/package.json' with { type: 'json' };

const kinds = (module, names) => Object.fromEntries(names.map((name) => [name, typeof module[name]]));

/** What the page controller of a registered dashboard serves for a file: its type and first line, read from dist. */
async function served(file) {
  const [Page] = dashboard.JobsDashboardModule.register({ public: true }).controllers;
  const asset = new Page().asset(file);
  let text = '';
  for await (const chunk of asset.getStream()) text += chunk;
  return { type: asset.getHeaders().type, first: text.split('\n')[0] };
}

console.log(
  JSON.stringify({
    main: kinds(main, ['JobsModule', 'Job', 'OnJobEvent', 'JobQueue', 'JobEvents', 'JobsMonitor', 'JobsErrorFilter']),
    mainHasDashboard: 'JobsDashboardModule' in main,
    dashboard: kinds(dashboard, ['JobsDashboardModule']),
    assets: { 'dashboard.js': await served('dashboard.js'), 'views.css': await served('views.css') },
    health: kinds(health, ['JobsHealthIndicator']),
    metrics: kinds(metrics, ['JobsMetrics', 'JOBS_METRICS_REGISTRY']),
    testing: kinds(testing, ['ManualClock']),
    version: packageJson.version,
  }),
);
