// `node --import ./test/support/register-swc.mjs <file>.ts`: the TypeScript sources run as they are.
// The synchronous `registerHooks()` (Node 22.15 on): `register()` is deprecated from Node 26 on, and
// its warning would reach the stderr tests read. Older Node 22 releases get the same hooks through it.
import * as nodeModule from 'node:module';
import { load, resolve } from './swc-loader.mjs';

if (nodeModule.registerHooks) nodeModule.registerHooks({ resolve, load });
else nodeModule.register('./swc-loader.mjs', import.meta.url);
