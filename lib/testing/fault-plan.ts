/** A fault the next attempt of a job name meets, in the order they were asked for. */
type Fault =
  /** The handler is not called; the attempt fails with this error as if the handler had thrown it. */
  | { kind: 'fail'; error: Error }
  /** The handler runs; then its runner "dies": the outcome is never written and the lease is left to expire. */
  | { kind: 'die' }
  /**
   * The handler runs up to the end of this step's work; then its runner "dies" before the step's
   * record is written (the lease is left to expire). Taken by the first attempt that reaches it.
   */
  | { kind: 'die-after-step'; step: string };

/** Faults waiting for the attempts they are meant for, by job name. */
export class FaultPlan {
  private readonly byName = new Map<string, Fault[]>();

  add(name: string, fault: Fault): void {
    const list = this.byName.get(name) ?? [];
    list.push(fault);
    this.byName.set(name, list);
  }

  /** The fault for the next attempt of `name`, used up by taking it; dieAfterStep faults wait for their step. */
  take(name: string): Fault | undefined {
    const list = this.byName.get(name);
    const index = list?.findIndex((f) => f.kind !== 'die-after-step') ?? -1;
    if (!list || index < 0) return undefined;
    const [fault] = list.splice(index, 1);
    if (list.length === 0) this.byName.delete(name);
    return fault;
  }

  /** Whether an attempt of `name` that finished `step`'s work dies now: a dieAfterStep fault, used up by it. */
  takeStep(name: string, step: string): boolean {
    const list = this.byName.get(name);
    const index = list?.findIndex((f) => f.kind === 'die-after-step' && f.step === step) ?? -1;
    if (!list || index < 0) return false;
    list.splice(index, 1);
    if (list.length === 0) this.byName.delete(name);
    return true;
  }

  /** Faults not met yet: `{ 'send-receipt': ['fail', 'die'] }`. */
  pending(): Record<string, Array<Fault['kind']>> {
    return Object.fromEntries([...this.byName].map(([name, list]) => [name, list.map((f) => f.kind)]));
  }

  clear(): void {
    this.byName.clear();
  }
}
