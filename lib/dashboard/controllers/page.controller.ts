import { Get, Header, Param, Req, StreamableFile } from '@nestjs/common';
import { JobsNotFoundError } from '../../model/index.js';
import type { DashboardConfig } from '../dashboard-options.js';
import { pageAssets } from '../page/page-assets.js';
import { PAGE_CSP, pageHtml } from '../page/page-html.js';
import { DashboardRoutes } from './dashboard-routes.js';

/** What Express and Fastify requests share: the URL the page was asked at. */
interface PageRequest {
  originalUrl?: string;
  url?: string;
}

/** The page, its script modules and its stylesheet: no build step, nothing from elsewhere. */
export function pageController(config: DashboardConfig) {
  const assets = pageAssets();

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

    // StreamableFile carries the Content-Type on Express and Fastify alike.
    @Get('assets/:file')
    @Header('cache-control', 'no-cache')
    @Header('x-content-type-options', 'nosniff')
    asset(@Param('file') file: string): StreamableFile {
      const asset = assets.get(file);
      if (!asset) {
        throw new JobsNotFoundError(
          `Jobs dashboard: no asset named ${JSON.stringify(file.slice(0, 100))}; the page loads ${[...assets.keys()].join(', ')}. ` +
            'Potential fix: open the dashboard page itself, which asks for its own files.',
        );
      }
      return new StreamableFile(asset.body, { type: asset.type, length: asset.body.length });
    }
  }
  return JobsDashboardPageController;
}
