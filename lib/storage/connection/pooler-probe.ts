import pg from 'pg';

/** Two sessions the probe can hold at once, and give back. */
export interface ProbeSessions {
  open(): Promise<ProbeSession>;
}
interface ProbeSession {
  query(text: string): Promise<{ rows: Array<Record<string, unknown>> }>;
  close(): Promise<void>;
}

/** How long the second session keeps its transaction open while the first asks again. */
const HOLD_MS = 250;

/**
 * Whether the sessions the library opens are shared out per transaction
 * (PgBouncer in transaction mode, Supavisor, RDS Proxy): the first session
 * asks for its server process, the second opens a transaction and asks,
 * then the first asks again. On a direct connection or through a session
 * pooler a session keeps one server process, and two open sessions never
 * share one; a transaction pooler hands the idle first session's server to
 * the second's transaction, and then the first another one.
 */
export async function sharesServerSessions(sessions: ProbeSessions): Promise<boolean> {
  const first = await sessions.open();
  let second: ProbeSession | null = null;
  try {
    const pid = async (s: ProbeSession) => Number((await s.query('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
    const before = await pid(first);
    second = await sessions.open();
    await second.query('BEGIN');
    const held = await pid(second);
    // With one server connection in the pooler the first session waits for the second's commit.
    const again = pid(first);
    await Promise.race([again, new Promise((resolve) => setTimeout(resolve, HOLD_MS))]);
    await second.query('COMMIT');
    const after = await again;
    return held === before || after !== before;
  } finally {
    await second?.close();
    await first.close();
  }
}

/** Probe sessions on new clients of a `pg` config, each closed after. */
export function clientSessions(config: pg.ClientConfig): ProbeSessions {
  return {
    async open() {
      const client = new pg.Client(config);
      client.on('error', () => undefined);
      await client.connect();
      return { query: (text) => client.query(text), close: () => client.end().catch(() => undefined) };
    },
  };
}

/** Probe sessions borrowed from a pool (the app's DataSource), each given back. */
export function poolSessions(pool: pg.Pool): ProbeSessions {
  return {
    async open() {
      const client = await pool.connect();
      return {
        query: (text) => client.query(text),
        close: async () => client.release(),
      };
    },
  };
}
