#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx: `npm ci` is the only install step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/index.ts');
const code = await main(process.argv.slice(2));
if (code >= 0) process.exit(code);
