import { ForbiddenException, type CanActivate, type ExecutionContext } from '@nestjs/common';

type Headers = Record<string, string | string[] | undefined>;

const SAFE_METHODS = ['GET', 'HEAD', 'OPTIONS'];

/**
 * Refuses actions sent by another site's page (cross-site request forgery):
 * a POST whose `Sec-Fetch-Site` says it came from another site, or whose
 * `Origin` names a host other than the request's own (or one of the
 * dashboard's `allowedOrigins`). Browsers send at least one of the two with
 * every POST; a request with neither (curl, a script) is no browser's and
 * passes on to the app's guards.
 */
export class SameOriginGuard implements CanActivate {
  constructor(private readonly allowedHosts: readonly string[]) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ method?: string; headers?: Headers }>();
    const method = (request.method ?? 'GET').toUpperCase();
    if (SAFE_METHODS.includes(method)) return true;
    const headers = request.headers ?? {};
    const site = first(headers['sec-fetch-site'])?.toLowerCase();
    if (site !== undefined && site !== 'same-origin' && site !== 'none') {
      throw refused(`the request came from another site (Sec-Fetch-Site: ${site})`);
    }
    const origin = first(headers.origin);
    if (origin === undefined) return true;
    let host: string;
    try {
      host = new URL(origin).host.toLowerCase();
    } catch {
      throw refused(`its Origin header (${JSON.stringify(origin.slice(0, 100))}) is not an origin`);
    }
    const own = [first(headers.host), first(headers['x-forwarded-host'])?.split(',')[0]]
      .filter((h): h is string => !!h)
      .map((h) => h.trim().toLowerCase());
    if (host && (own.includes(host) || this.allowedHosts.includes(host))) return true;
    throw refused(
      `its Origin (${host || origin.slice(0, 100)}) is not this dashboard's host (${own[0] ?? 'none given'})`,
    );
  }
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function refused(why: string): ForbiddenException {
  return new ForbiddenException(
    `Jobs dashboard: action refused because ${why}. Actions are accepted from the dashboard's own page only. ` +
      `Potential fix: use the dashboard at its own address; behind a proxy that rewrites Host, list the public origin in register({ allowedOrigins: ['https://…'] }).`,
  );
}
