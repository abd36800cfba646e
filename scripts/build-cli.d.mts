export const BUNDLE_DIR: string;
export const INPUTS_FILE: string;
export function buildCli(outdir?: string): Promise<{ outdir: string; inputs: string[] }>;
