import { register } from 'node:module';
register('./swc-loader.mjs', import.meta.url);
