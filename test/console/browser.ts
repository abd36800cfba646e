/** The console build and Debian's Chromium, for the browser tests (harness.ts) and `npm run bench -- console`; no vitest here. */
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { REPO_ROOT } from '../processes.ts';

export const CHROMIUM = process.env.LAKEPORT_CHROMIUM ?? '/usr/bin/chromium';
/** The flags the browser runs with; playwright-core adds a fresh --user-data-dir of its own per launch. */
export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Builds the console into `outDir` (a fresh directory per suite: no shared dist/ between parallel runs). */
export async function buildConsole(outDir: string): Promise<void> {
  const vite = await import('vite');
  await vite.build({ configFile: path.join(REPO_ROOT, 'console', 'vite.config.ts'), logLevel: 'error', build: { outDir, emptyOutDir: true } });
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false, args: CHROMIUM_FLAGS });
}
