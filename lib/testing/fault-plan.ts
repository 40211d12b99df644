/** A fault the next attempt of a job name meets, in the order they were asked for. */
export type Fault =
  /** The handler is not called; the attempt fails with this error as if the handler had thrown it. */
  | { kind: 'fail'; error: Error }
  /** The handler runs; then its runner "dies": the outcome is never written and the lease is left to expire. */
  | { kind: 'die' };

/** Faults waiting for the attempts they are meant for, by job name. */
export class FaultPlan {
  private readonly byName = new Map<string, Fault[]>();

  add(name: string, fault: Fault): void {
    const list = this.byName.get(name) ?? [];
    list.push(fault);
    this.byName.set(name, list);
  }

  /** The fault for the next attempt of `name`, used up by taking it. */
  take(name: string): Fault | undefined {
    const list = this.byName.get(name);
    const fault = list?.shift();
    if (list && list.length === 0) this.byName.delete(name);
    return fault;
  }

  /** Faults not met yet: `{ 'send-receipt': ['fail', 'die'] }`. */
  pending(): Record<string, Array<Fault['kind']>> {
    return Object.fromEntries([...this.byName].map(([name, list]) => [name, list.map((f) => f.kind)]));
  }

  clear(): void {
    this.byName.clear();
  }
}
