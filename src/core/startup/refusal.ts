/**
 * A start that must not go on: a misconfiguration of a server or worker (most of them invited by
 * running several), refused before anything is served. The message names what is wrong, the setting
 * that fixes it and the section of docs/deploy.md that explains it; the CLI prints it as one line
 * and exits 2, without a stack trace.
 */
export class StartRefusal extends Error {
  override readonly name = 'StartRefusal';

  constructor(
    problem: string,
    fix: string,
    /** The heading anchor in docs/deploy.md (test/deploy-docs.test.ts checks it exists). */
    readonly anchor: string,
  ) {
    super(`${problem}: ${fix}; see docs/deploy.md#${anchor}`);
  }
}
