// The part of madge's API that test/import-cycles.test.ts uses (the package ships no types).
declare module 'madge' {
  interface MadgeConfig {
    fileExtensions?: string[];
    tsConfig?: string;
  }
  interface MadgeResult {
    /** Each module (relative to the directory given) with the modules it imports. */
    obj(): Record<string, string[]>;
    circular(): string[][];
  }
  export default function madge(path: string, config?: MadgeConfig): Promise<MadgeResult>;
}
