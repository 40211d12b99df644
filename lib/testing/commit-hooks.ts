import type {
  DataSource,
  EntityManager,
  EntitySubscriberInterface,
  QueryRunner,
  TransactionCommitEvent,
  TransactionRollbackEvent,
} from 'typeorm';
import { managerDataSource } from '../model/entity-manager.js';

/**
 * Runs a callback when a caller's TypeORM transaction commits, before the
 * caller's `commitTransaction()` (and so its `dataSource.transaction(…)`)
 * returns: TypeORM awaits what an `afterTransactionCommit` subscriber
 * returns. Only the outermost commit counts (a savepoint's release leaves
 * the transaction open), and a rollback forgets the transaction.
 */
export class CommitHooks {
  private readonly pending = new WeakSet<QueryRunner>();
  private readonly attached = new Set<DataSource>();
  private readonly subscriber: EntitySubscriberInterface = {
    afterTransactionCommit: (event: TransactionCommitEvent) => {
      const runner = event.queryRunner;
      if (runner.isTransactionActive || !this.pending.delete(runner)) return;
      return this.onCommit();
    },
    afterTransactionRollback: (event: TransactionRollbackEvent) => {
      if (!event.queryRunner.isTransactionActive) this.pending.delete(event.queryRunner);
    },
  };

  constructor(private readonly onCommit: () => Promise<void>) {}

  /** Whether `manager` writes in a transaction that has yet to commit. */
  static inOpenTransaction(manager: EntityManager): boolean {
    const runner = manager.queryRunner;
    return !!runner && !runner.isReleased && runner.isTransactionActive;
  }

  /** Calls back once the transaction `manager` writes in commits. */
  afterCommit(manager: EntityManager): void {
    this.pending.add(manager.queryRunner!);
    const dataSource = managerDataSource(manager);
    if (this.attached.has(dataSource)) return;
    // Subscribers are read at each broadcast, so one added to a running DataSource takes effect at once.
    dataSource.subscribers.push(this.subscriber);
    this.attached.add(dataSource);
  }

  /** Leaves the app's DataSources as they were. */
  detach(): void {
    for (const dataSource of this.attached) {
      const at = dataSource.subscribers.indexOf(this.subscriber);
      if (at >= 0) dataSource.subscribers.splice(at, 1);
    }
    this.attached.clear();
  }
}
