/**
 * Writes that arrive together go to the database as one statement (group commit): those that arrive
 * in the same turn of the event loop go together, and so do those that arrive while `concurrency`
 * statements are in flight, in the next one. Each `add` resolves once the statement carrying it has
 * committed, so a caller answers only what is durable, exactly as with a statement of its own. When a
 * statement fails, its items are written one by one, so one bad item fails alone.
 */
export class WriteCoalescer<T> {
  private queue: { item: T; resolve(): void; reject(error: unknown): void }[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly concurrency = 2,
    private readonly maxBatch = 500,
  ) {}

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Starts a statement after this turn's I/O callbacks (requests read together add their writes first), if one may start. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.concurrency || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.writeBatch();
    });
  }

  private async writeBatch(): Promise<void> {
    const batch = this.queue.splice(0, this.maxBatch);
    if (batch.length === 0) return;
    this.inFlight++;
    try {
      await this.write(batch.map((b) => b.item));
      for (const b of batch) b.resolve();
    } catch (error) {
      if (batch.length === 1) batch[0].reject(error);
      else for (const b of batch) await this.write([b.item]).then(b.resolve, b.reject);
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }
}
