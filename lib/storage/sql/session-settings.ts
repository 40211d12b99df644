import type { ResolvedTimeouts } from './timeouts.js';

/** What sits between the library and PostgreSQL (`JobsModule.forRoot({ pooler })`); null: nothing, a direct connection. */
export type PoolerMode = 'transaction' | 'session';

/** A server setting and its value, as SQL text. */
export type ServerSetting = readonly [name: string, value: string];

/**
 * The server settings a pool's statements rely on, and how they reach the
 * server. Never as startup parameters: PgBouncer (at its defaults) and other
 * poolers refuse those. Where a session is the library's own from connect to
 * close (a direct connection, a session pooler), a SET once per session
 * costs nothing per statement. Behind a transaction pooler a session lasts
 * one transaction: there each transaction opens with SET LOCAL, a SET would
 * leak to other clients' transactions, and a named prepared statement may
 * be missing on the next server connection, so statements go unnamed.
 */
export class SessionSettings {
  constructor(
    private readonly settings: readonly ServerSetting[],
    /** True behind a transaction pooler: settings per transaction, no named statements. */
    readonly perTransaction: boolean,
  ) {}

  /** Whether statements may be named prepared statements (kept per session). */
  get namedStatements(): boolean {
    return !this.perTransaction;
  }

  /** SQL to run once on each new session; null when there is none to run. */
  get onConnect(): string | null {
    if (this.perTransaction || this.settings.length === 0) return null;
    return this.settings.map(([name, value]) => `SET ${name} = ${value}`).join('; ');
  }

  /** What opens a transaction: BEGIN, with the settings as SET LOCAL behind a transaction pooler. */
  get begin(): string {
    const locals = this.locals;
    return locals ? `BEGIN; ${locals}` : 'BEGIN';
  }

  /** The settings as SET LOCAL, for a transaction opened elsewhere (TypeORM's); null when none go per transaction. */
  get locals(): string | null {
    if (!this.perTransaction || this.settings.length === 0) return null;
    return this.settings.map(([name, value]) => `SET LOCAL ${name} = ${value}`).join('; ');
  }

  /** Whether a lone statement needs a transaction of its own to carry the settings. */
  get wrapsStatements(): boolean {
    return this.perTransaction && this.settings.length > 0;
  }

  /** The same settings and more, applied the same way. */
  with(more: readonly ServerSetting[]): SessionSettings {
    return new SessionSettings([...this.settings, ...more], this.perTransaction);
  }

  /** A pg pool's `onConnect` hook applying the settings to each new session, or nothing to add. */
  poolHook(): { onConnect?: (client: { query(text: string): Promise<unknown> }) => Promise<void> } {
    const sql = this.onConnect;
    if (!sql) return {};
    return {
      onConnect: async (client) => {
        await client.query(sql);
      },
    };
  }
}

/** The server-side bound on each statement of the library's own sessions (`timeouts.statement`). */
export function statementTimeout(timeouts: ResolvedTimeouts): ServerSetting {
  return ['statement_timeout', String(timeouts.statement)];
}

/** Settings for the connections of a pooler mode (null: direct): none yet, applied as that mode allows. */
export function sessionSettingsFor(pooler: PoolerMode | null): SessionSettings {
  return new SessionSettings([], pooler === 'transaction');
}
