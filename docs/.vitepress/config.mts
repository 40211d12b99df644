import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig, type DefaultTheme } from 'vitepress';
import { withMermaid } from 'vitepress-plugin-mermaid';

const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as {
  version: string;
};

/** The API reference's sidebar, written by TypeDoc (`npm run docs:api`) next to its pages. */
function apiSidebar(): DefaultTheme.SidebarItem[] {
  const file = fileURLToPath(new URL('../api/typedoc-sidebar.json', import.meta.url));
  if (!existsSync(file)) {
    throw new Error('docs/api/ is missing: run `npm run docs:build` (or `npm run docs:api` first)');
  }
  return JSON.parse(readFileSync(file, 'utf8')) as DefaultTheme.SidebarItem[];
}

const guide: DefaultTheme.SidebarItem[] = [
  {
    text: 'Guide',
    items: [
      { text: 'Getting started', link: '/guide/getting-started' },
      { text: 'Jobs', link: '/guide/jobs' },
      { text: 'Steps and exactly-once effects', link: '/guide/steps' },
      { text: 'Durable execution', link: '/guide/durable-execution' },
      { text: 'Workflows', link: '/guide/workflows' },
      { text: 'Flow control', link: '/guide/flow-control' },
      { text: 'Recurring schedules', link: '/guide/schedules' },
      { text: 'Events and monitoring', link: '/guide/monitoring' },
      { text: 'Health checks and alerts', link: '/guide/health' },
      { text: 'Dashboard', link: '/guide/dashboard' },
      { text: 'Testing your jobs', link: '/guide/testing' },
      { text: 'Command line', link: '/guide/cli' },
      { text: 'Operating it', link: '/guide/operating' },
      { text: 'Kubernetes and Cloud Run', link: '/guide/kubernetes' },
      { text: 'Connection poolers and managed PostgreSQL', link: '/guide/poolers' },
      { text: 'Security: encryption at rest', link: '/guide/security' },
    ],
  },
  {
    text: 'Reference',
    items: [
      { text: 'Configuration', link: '/reference/configuration' },
      { text: 'API', link: '/api/' },
      { text: 'Guarantees', link: '/reference/guarantees' },
      { text: 'Performance', link: '/reference/performance' },
    ],
  },
  {
    text: 'Contributing',
    items: [
      { text: 'Developing', link: '/contributing/' },
      { text: 'Architecture', link: '/contributing/architecture' },
    ],
  },
];

export default withMermaid(
  defineConfig({
    title: 'nestjs-durable-jobs',
    description: 'Durable background jobs for NestJS, stored in PostgreSQL through TypeORM',
    lang: 'en',
    cleanUrls: true,
    lastUpdated: false,
    // TypeDoc's options file lives here, not a page.
    srcExclude: ['typedoc.json'],
    themeConfig: {
      nav: [
        { text: 'Guide', link: '/guide/getting-started' },
        { text: 'Configuration', link: '/reference/configuration' },
        { text: 'API', link: '/api/' },
        { text: `v${pkg.version}`, link: '/changelog' },
      ],
      sidebar: {
        '/guide/': guide,
        '/reference/': guide,
        '/contributing/': guide,
        '/changelog': guide,
        '/api/': [{ text: 'Back to the guide', link: '/guide/getting-started' }, { text: 'API', items: apiSidebar() }],
      },
      outline: { level: [2, 3] },
      search: { provider: 'local' },
    },
    mermaid: { securityLevel: 'strict' },
  }),
);
