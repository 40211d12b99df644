import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layer table of docs/contributing/architecture.md: what each folder of
 * lib/ may import. `storage` marked "interface" means its *.interface.ts
 * files only: the layers above storage see its contracts, never its
 * PostgreSQL classes. Top-level files (jobs.module.ts, index.ts) wire
 * everything and are imported by nobody.
 */
const LAYERS = {
  model: [],
  storage: ['model'],
  discovery: ['model'],
  queue: ['model', 'storage:interface', 'discovery'],
  worker: ['model', 'storage:interface', 'discovery'],
  scheduler: ['model', 'storage:interface', 'discovery'],
  monitoring: ['model', 'storage:interface'],
  admin: ['model', 'storage:interface', 'queue', 'monitoring'],
  dashboard: ['model', 'queue', 'monitoring', 'admin'],
  cli: ['model', 'queue', 'monitoring', 'admin', 'root'],
  testing: ['model', 'queue', 'monitoring', 'scheduler', 'discovery', 'worker', 'storage:interface', 'root'],
};

/**
 * Storage's folders, from the ground floor up: what each may import of the
 * others (the table of docs/contributing/architecture.md, "Storage"). No row
 * names a folder that names it back, so there is no loop among them; a file
 * directly in storage/ belongs to no row and may import none of them.
 */
export const STORAGE_FOLDERS = {
  sql: [],
  embedded: [],
  routines: ['sql'],
  migrations: ['sql', 'routines'],
  notifications: ['sql'],
  jobs: ['sql', 'routines', 'migrations'],
  workflows: ['sql', 'routines', 'jobs'],
  queues: ['sql'],
  schedules: ['sql'],
  services: ['sql', 'queues', 'schedules'],
  admin: ['sql', 'routines', 'jobs', 'workflows'],
  monitoring: ['sql', 'jobs', 'workflows', 'queues', 'schedules', 'admin'],
  connection: ['sql', 'embedded', 'routines', 'migrations'],
};

const lib = path.resolve('lib');

const DASHBOARD_ASSETS = 'lib/dashboard/assets/**/*.js';

/** What the dashboard's script uses of the browser. */
const BROWSER_GLOBALS = Object.fromEntries(
  [
    'document',
    'window',
    'location',
    'history',
    'fetch',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'URLSearchParams',
    'Node',
  ].map((name) => [name, 'readonly']),
);

/** Markup from strings: the page builds its DOM from text nodes and attributes only. */
const MARKUP_SINKS = ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'write', 'writeln'].map((property) => ({
  property,
  message: 'The dashboard builds elements with h() and s() (text and attributes only), never markup from strings.',
}));

function layerOf(file) {
  const rel = path.relative(lib, file);
  if (rel.startsWith('..')) return null;
  const [first, ...rest] = rel.split(path.sep);
  return rest.length === 0 ? 'root' : first;
}

/** The folder of storage/ a file is in; '' for a file directly in storage/. */
function storageFolderOf(file) {
  const [, folder, ...rest] = path.relative(lib, file).split(path.sep);
  return rest.length === 0 ? '' : folder;
}

const layers = {
  meta: {
    type: 'problem',
    docs: { description: "Keeps lib/'s imports to the layer table in docs/contributing/architecture.md" },
    messages: {
      forbidden:
        '{{from}}/ may not import {{target}} ({{to}}/{{which}}); allowed: {{allowed}}. See docs/contributing/architecture.md, "Layers".',
      storage:
        'storage/{{from}} may not import {{target}} (storage/{{to}}); allowed: {{allowed}}. See docs/contributing/architecture.md, "Storage".',
    },
    schema: [],
  },
  create(context) {
    const from = layerOf(context.filename);
    if (!from || from === 'root') return {};
    const allowed = LAYERS[from] ?? [];
    const check = (node) => {
      const spec = node.source && node.source.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = path.resolve(path.dirname(context.filename), spec).replace(/\.js$/, '.ts');
      const to = layerOf(target);
      if (to === 'storage' && from === 'storage') return checkStorage(node, spec, target);
      if (!to || to === from) return;
      const isInterface = target.endsWith('.interface.ts');
      if (allowed.includes(to) || (isInterface && allowed.includes(`${to}:interface`))) return;
      context.report({
        node,
        messageId: 'forbidden',
        data: {
          from,
          to,
          target: spec,
          which: isInterface ? 'an interface' : 'an implementation',
          allowed: allowed.join(', ') || 'nothing of ours',
        },
      });
    };
    const checkStorage = (node, spec, target) => {
      const own = storageFolderOf(context.filename);
      const other = storageFolderOf(target);
      if (own === other && own !== '') return;
      const allowed = STORAGE_FOLDERS[own] ?? [];
      if (other !== '' && allowed.includes(other)) return;
      context.report({
        node,
        messageId: 'storage',
        data: {
          from: own ? `${own}/` : '',
          to: other ? `${other}/` : '',
          target: spec,
          allowed: allowed.map((f) => `${f}/`).join(', ') || 'no other storage folder',
        },
      });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'bench/**',
      'coverage/**',
      '.jobs-data/**',
      'docs/.vitepress/dist/**',
      'docs/.vitepress/cache/**',
      'docs/api/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Nest modules are classes with only decorators; that is the framework's idiom.
      '@typescript-eslint/no-extraneous-class': 'off',
    },
  },
  {
    files: ['lib/**/*.ts'],
    plugins: { 'durable-jobs': { rules: { layers } } },
    rules: { 'durable-jobs/layers': 'error' },
  },
  {
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    ignores: [DASHBOARD_ASSETS],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', URL: 'readonly' } },
  },
  {
    // The dashboard page's script runs in the browser, as ES modules, with nothing of Node.
    files: [DASHBOARD_ASSETS],
    languageOptions: { sourceType: 'module', globals: BROWSER_GLOBALS },
    rules: { 'no-restricted-properties': ['error', ...MARKUP_SINKS] },
  },
);
