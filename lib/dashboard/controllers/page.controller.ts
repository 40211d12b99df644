import { Get, Header, Req } from '@nestjs/common';
import type { DashboardConfig } from '../dashboard-options.js';
import { DASHBOARD_SCRIPT, PAGE_CSP, pageHtml } from '../page/page-html.js';
import { PAGE_STYLES } from '../page/page-styles.js';
import { DashboardRoutes } from './dashboard-routes.js';

/** What Express and Fastify requests share: the URL the page was asked at. */
interface PageRequest {
  originalUrl?: string;
  url?: string;
}

/** The page, its script and its stylesheet: no build step, nothing from elsewhere. */
export function pageController(config: DashboardConfig) {
  @DashboardRoutes(config)
  class JobsDashboardPageController {
    @Get()
    @Header('content-type', 'text/html; charset=utf-8')
    @Header('cache-control', 'no-store')
    @Header('content-security-policy', PAGE_CSP)
    @Header('x-content-type-options', 'nosniff')
    @Header('referrer-policy', 'same-origin')
    page(@Req() request: PageRequest): string {
      // The path it was asked at (a global prefix included), so the script and API resolve beside it.
      const base = (request.originalUrl ?? request.url ?? `/${config.path}`).split(/[?#]/)[0]!.replace(/\/+$/, '');
      return pageHtml(config.title, base);
    }

    @Get('assets/dashboard.js')
    @Header('content-type', 'text/javascript; charset=utf-8')
    @Header('cache-control', 'no-cache')
    @Header('x-content-type-options', 'nosniff')
    script(): string {
      return DASHBOARD_SCRIPT;
    }

    @Get('assets/dashboard.css')
    @Header('content-type', 'text/css; charset=utf-8')
    @Header('cache-control', 'no-cache')
    @Header('x-content-type-options', 'nosniff')
    styles(): string {
      return PAGE_STYLES;
    }
  }
  return JobsDashboardPageController;
}
