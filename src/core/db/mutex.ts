/** A FIFO lock: PGlite has one session, so each Kysely connection (and transaction) must hold it alone. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  /** Who holds the lock or waits for it. */
  holders = 0;

  async acquire(): Promise<() => void> {
    let release!: () => void;
    this.holders++;
    const next = new Promise<void>((resolve) => (release = resolve));
    const previous = this.tail;
    this.tail = previous.then(() => next);
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holders--;
      release();
    };
  }
}
