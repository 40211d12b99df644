/**
 * Named points a running job waits at until the test opens them, so a test
 * acts while a handler is at a known place rather than after a guessed delay.
 */
export class Gates {
  private readonly gates = new Map<string, () => void>();
  private readonly arrived = new Map<string, () => void>();

  /** Resolves when a run has reached the gate `name`. */
  reached(name: string): Promise<void> {
    return new Promise((resolve) => this.arrived.set(name, resolve));
  }

  open(name: string): void {
    this.gates.get(name)?.();
  }

  wait(name: string): Promise<void> {
    return new Promise((resolve) => {
      this.gates.set(name, resolve);
      this.arrived.get(name)?.();
    });
  }
}
