/**
 * A readers-writer lock for async work inside one process: many "shared"
 * holders at once (outcome flushes, which touch disjoint rows), or one
 * "exclusive" holder (lease renewal, which touches all of this worker's rows
 * and would deadlock with a flush that locks some of them in another order).
 */
export class ReadersWriterLock {
  private shared = 0;
  private exclusive = false;
  private readonly waiting: Array<{ exclusive: boolean; grant: () => void }> = [];

  /** Runs `fn` once no exclusive holder holds the lock or waits for it; other shared holders may overlap. */
  async runShared<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(false);
    try {
      return await fn();
    } finally {
      this.shared--;
      this.next();
    }
  }

  /** Runs `fn` alone, once every shared holder before it has let go. */
  async runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(true);
    try {
      return await fn();
    } finally {
      this.exclusive = false;
      this.next();
    }
  }

  private acquire(exclusive: boolean): Promise<void> {
    // Shared holders do not jump a waiting exclusive one, so renewal is never starved.
    if (!this.exclusive && this.waiting.length === 0 && (exclusive ? this.shared === 0 : true)) {
      this.take(exclusive);
      return Promise.resolve();
    }
    return new Promise((grant) => this.waiting.push({ exclusive, grant }));
  }

  private take(exclusive: boolean): void {
    if (exclusive) this.exclusive = true;
    else this.shared++;
  }

  private next(): void {
    while (this.waiting.length && !this.exclusive) {
      const head = this.waiting[0]!;
      if (head.exclusive && this.shared > 0) return;
      this.waiting.shift();
      this.take(head.exclusive);
      head.grant();
      if (head.exclusive) return;
    }
  }
}
