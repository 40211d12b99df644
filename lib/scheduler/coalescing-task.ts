/**
 * Runs an async task one at a time. A request while it runs is folded into
 * one follow-up run, so a burst of wake-ups (three timers, a notification and
 * a clock change) costs at most two passes, and every caller's promise
 * resolves only after a pass that started after its request.
 */
export class CoalescingTask {
  private current: Promise<void> | null = null;
  private next: Promise<void> | null = null;

  constructor(private readonly task: () => Promise<void>) {}

  run(): Promise<void> {
    if (!this.current) {
      this.current = this.task().finally(() => {
        this.current = null;
      });
      return this.current;
    }
    if (!this.next) {
      const again = () => {
        this.next = null;
        return this.run();
      };
      this.next = this.current.then(again, again);
    }
    return this.next;
  }

  /** Resolves when no pass is running or pending. */
  async idle(): Promise<void> {
    while (this.current || this.next) await (this.next ?? this.current)!.catch(() => undefined);
  }
}
