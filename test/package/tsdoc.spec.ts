/**
 * Every export of every entry point carries a TSDoc summary (a `/** … *\/`
 * before its declaration): the API reference on the docs site is generated
 * from them, and an export without one shows there as a bare signature.
 * Members (methods, properties) are not required here, only the exports.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const repo = fileURLToPath(new URL('../..', import.meta.url));
/** The `exports` of package.json, as sources. */
const ENTRY_POINTS = [
  'lib/index.ts',
  'lib/testing/index.ts',
  'lib/dashboard/jobs-dashboard.module.ts',
  'lib/monitoring/jobs-health.indicator.ts',
  'lib/monitoring/jobs-metrics.ts',
];

function undocumentedExports(): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(repo, 'tsconfig.build.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  const files = ENTRY_POINTS.map((f) => path.join(repo, f));
  const program = ts.createProgram(files, { ...config!.options, noEmit: true });
  const checker = program.getTypeChecker();
  const missing: string[] = [];
  for (const file of files) {
    const module = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      if (symbol.getDocumentationComment(checker).length > 0) continue;
      const where = symbol.declarations?.[0]?.getSourceFile().fileName ?? '?';
      missing.push(`${path.relative(repo, file)}: ${exported.name} (${path.relative(repo, where)})`);
    }
  }
  return missing;
}

it('gives every export of every entry point a TSDoc summary', () => {
  expect(undocumentedExports()).toEqual([]);
}, 60_000);
