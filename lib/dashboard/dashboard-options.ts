import type { CanActivate, Type } from '@nestjs/common';
import { checkOptions, describeValue, JobsError, optionShape } from '../model/index.js';
import { fillTraceUrl, TRACE_ID } from './trace-links.js';

/** What `JobsDashboardModule.register()` takes: where the page is served and who may open it. */
export interface JobsDashboardOptions {
  /** Where the page is served; its JSON endpoints live under `<path>/api`. Default 'jobs-dashboard'. */
  path?: string;
  /**
   * Guards on every route (page, JSON and actions), e.g. your authentication
   * guard. The page shows payloads and errors and can retry, cancel, delete
   * and pause: either `guards` or `public: true` is required.
   */
  guards?: Array<Type<CanActivate> | CanActivate>;
  /**
   * Serve the dashboard without any guard, to whoever reaches the port: for a
   * local demo or a trusted network only. Must be said explicitly.
   */
  public?: boolean;
  /** The page's heading; default 'Jobs'. */
  title?: string;
  /**
   * Origins (e.g. 'https://ops.example.com') whose pages may post actions,
   * besides the dashboard's own host: for a proxy that rewrites the Host header.
   */
  allowedOrigins?: string[];
  /**
   * Turns each attempt's trace id into a link to your tracing backend, e.g.
   * 'https://tempo.example/trace/{traceId}': an http(s) URL holding
   * `{traceId}` (and, if the backend takes it, `{spanId}`), each replaced by
   * the attempt's id, URL-encoded. Without it the page shows the ids as text.
   */
  traceUrl?: string;
}

export interface DashboardConfig {
  /** Without leading or trailing slashes. */
  path: string;
  guards: Array<Type<CanActivate> | CanActivate>;
  title: string;
  /** Hosts (host[:port], lower case) allowed to post besides the request's own. */
  allowedHosts: string[];
  /** The link template of an attempt's trace, checked; null for none. */
  traceUrl: string | null;
}

const WHERE = 'JobsDashboardModule.register()';
const DASHBOARD_SHAPE = optionShape<JobsDashboardOptions>({
  path: true,
  guards: true,
  public: true,
  title: true,
  allowedOrigins: true,
  traceUrl: true,
});

/**
 * Checks register()'s options. A dashboard is closed unless the app says
 * otherwise: guards to protect it, or `public: true` to open it on purpose.
 */
export function dashboardConfig(options: JobsDashboardOptions | undefined): DashboardConfig {
  const o = checkOptions(WHERE, options, '{ guards: [AuthGuard] }', DASHBOARD_SHAPE) ?? {};
  if (o.public !== undefined && typeof o.public !== 'boolean') {
    throw new JobsError(
      `${WHERE}: "public" must be true or false, got ${describeValue(o.public)}. Potential fix: public: true, for a trusted network only.`,
    );
  }
  if (o.guards !== undefined && !Array.isArray(o.guards)) {
    throw new JobsError(
      `${WHERE}: "guards" must be an array of guard classes or instances, got ${describeValue(o.guards)}. Potential fix: guards: [AuthGuard].`,
    );
  }
  const guards = o.guards ?? [];
  guards.forEach((guard, i) => {
    const isClass = typeof guard === 'function';
    const isInstance = typeof guard === 'object' && guard !== null && typeof guard.canActivate === 'function';
    if (!isClass && !isInstance) {
      throw new JobsError(
        `${WHERE}: guards[${i}] is ${describeValue(guard)}, not a guard class or an object with canActivate(). Potential fix: guards: [AuthGuard].`,
      );
    }
  });
  if (guards.length === 0 && o.public !== true) {
    throw new JobsError(
      `${WHERE}: the dashboard shows payloads and errors and can retry, cancel and delete jobs, and no guard protects it. ` +
        `Potential fix: register({ guards: [AuthGuard] }) or register({ public: true }) for a trusted network.`,
    );
  }
  if (guards.length > 0 && o.public === true) {
    throw new JobsError(
      `${WHERE}: "public: true" says the dashboard is open to all, yet guards were given. ` +
        `Potential fix: keep the guards and leave out "public".`,
    );
  }
  return {
    path: checkPath(o.path),
    guards,
    title: checkTitle(o.title),
    allowedHosts: checkOrigins(o.allowedOrigins),
    traceUrl: checkTraceUrl(o.traceUrl),
  };
}

function checkPath(value: unknown): string {
  if (value === undefined) return 'jobs-dashboard';
  const path = typeof value === 'string' ? value.replace(/^\/+|\/+$/g, '') : null;
  if (path === null || path === '' || !/^[A-Za-z0-9._~\-/]+$/.test(path) || path.includes('//')) {
    throw new JobsError(
      `${WHERE}: "path" must be a URL path of letters, digits and - . _ ~ /, got ${describeValue(value)}. Potential fix: path: 'ops/jobs'.`,
    );
  }
  return path;
}

function checkTitle(value: unknown): string {
  if (value === undefined) return 'Jobs';
  if (typeof value !== 'string' || value.trim() === '' || value.length > 200) {
    throw new JobsError(
      `${WHERE}: "title" must be a non-empty string of at most 200 characters, got ${describeValue(value)}. Potential fix: title: 'Jobs'.`,
    );
  }
  return value;
}

function checkTraceUrl(value: unknown): string | null {
  if (value === undefined) return null;
  const fix = "Potential fix: traceUrl: 'https://tempo.example/trace/{traceId}'.";
  if (typeof value !== 'string' || !value.includes(TRACE_ID)) {
    throw new JobsError(
      `${WHERE}: "traceUrl" must be a URL holding {traceId}, where each attempt's trace id goes, got ${describeValue(value)}. ${fix}`,
    );
  }
  let protocol: string | null = null;
  try {
    protocol = new URL(fillTraceUrl(value, '0', '0')).protocol;
  } catch {
    // Not a URL at all: refused below like one of another scheme.
  }
  // The scheme must be the template's own text, so no id can stand in for it.
  if ((protocol !== 'http:' && protocol !== 'https:') || !/^https?:\/\//i.test(value)) {
    throw new JobsError(
      `${WHERE}: "traceUrl" must be an absolute http or https URL (the page opens it as a link), got ${describeValue(value)}. ${fix}`,
    );
  }
  return value;
}

function checkOrigins(value: unknown): string[] {
  if (value === undefined) return [];
  const fail = (got: unknown) =>
    new JobsError(
      `${WHERE}: "allowedOrigins" must be an array of origins such as 'https://ops.example.com', got ${describeValue(got)}. ` +
        `Potential fix: allowedOrigins: ['https://ops.example.com'].`,
    );
  if (!Array.isArray(value)) throw fail(value);
  return value.map((origin) => {
    if (typeof origin !== 'string') throw fail(origin);
    try {
      const url = new URL(origin);
      if (!url.host || (url.pathname !== '/' && url.pathname !== '') || url.search) throw fail(origin);
      return url.host.toLowerCase();
    } catch {
      throw fail(origin);
    }
  });
}
