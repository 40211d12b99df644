import type pg from 'pg';
import type { ConnectionBudget } from './connection-budget.js';
import { sessionSettingsFor, statementTimeout, type PoolerMode, type SessionSettings } from './session-settings.js';
import type { ResolvedTimeouts } from './timeouts.js';

/**
 * How one instance reaches PostgreSQL: what sits in front of the server,
 * how its sessions get their settings, how many connections each use may
 * open, and where the LISTEN connection goes.
 */
export interface ConnectionPlan {
  pooler: PoolerMode | null;
  /** Settings of the module's DataSource sessions (the statement timeout on one it owns). */
  session: SessionSettings;
  budget: ConnectionBudget;
  /**
   * Where LISTEN goes: the DataSource's own server (`pool`), `directConnection`
   * (`direct`), or nowhere behind a transaction pooler without one (`none`):
   * workers and the scheduler poll then.
   */
  listen: 'pool' | 'direct' | 'none';
  /** `directConnection` as a `pg` config; null without one. */
  direct: pg.ClientConfig | null;
}

/** The settings every session of the library's own pools carries, as the pooler mode allows. */
export function ownSessionSettings(pooler: PoolerMode | null, timeouts: ResolvedTimeouts): SessionSettings {
  return sessionSettingsFor(pooler).with([statementTimeout(timeouts)]);
}

/** A plan for a direct connection with the default budget of a DataSource the app owns (tests, the CLI). */
export function directPlan(budget: ConnectionBudget, session: SessionSettings): ConnectionPlan {
  return { pooler: null, session, budget, listen: 'pool', direct: null };
}
