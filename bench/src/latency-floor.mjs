// Not part of the bench: the floor of the latency scenario for any queue on
// PostgreSQL, on this machine. Raw pg clients in one process, no framework:
// a producer inserts one row and NOTIFYs in the same statement (synchronous
// commit, as a durable enqueue must), 20 ms apart; a listener, on each
// notification, claims the oldest row with FOR UPDATE SKIP LOCKED. The
// figure is enqueue call -> claim returned, which every library's
// enqueue -> handler start includes.
//
//   node bench/src/latency-floor.mjs [jobs]
import pg from 'pg';
import { DATABASE_URL, ensureDatabase } from './common.mjs';

const n = Number(process.argv[2] ?? 200);
await ensureDatabase();
const url = DATABASE_URL;
const producer = new pg.Client({ connectionString: url });
const listener = new pg.Client({ connectionString: url });
const worker = new pg.Client({ connectionString: url, options: '-c synchronous_commit=off' });
await Promise.all([producer.connect(), listener.connect(), worker.connect()]);
await producer.query(
  'DROP TABLE IF EXISTS latency_floor; CREATE TABLE latency_floor (id bigserial PRIMARY KEY, state text, payload jsonb)',
);
await listener.query('LISTEN latency_floor');

const ms = (since) => Number(process.hrtime.bigint() - since) / 1e6;
const sent = new Map();
const enqueue = [];
const notified = [];
const claimed = [];
listener.on('notification', async (message) => {
  notified.push(ms(sent.get(Number(message.payload))));
  const { rows } = await worker.query({
    name: 'claim',
    text: `UPDATE latency_floor SET state = 'active' WHERE id = (
             SELECT id FROM latency_floor WHERE state = 'queued' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
           RETURNING id, payload`,
  });
  for (const row of rows) claimed.push(ms(sent.get(Number(row.id))));
});
for (let i = 1; i <= n; i++) {
  const t = process.hrtime.bigint();
  sent.set(i, t);
  await producer.query({
    name: 'enqueue',
    text: `WITH i AS (INSERT INTO latency_floor (state, payload) VALUES ('queued', $1) RETURNING id)
           SELECT pg_notify('latency_floor', id::text) FROM i`,
    values: [{ i }],
  });
  enqueue.push(ms(t));
  await new Promise((r) => setTimeout(r, 20));
}
await new Promise((r) => setTimeout(r, 200));
const pct = (values, q) => [...values].sort((a, b) => a - b)[Math.floor(q * (values.length - 1))].toFixed(1);
console.log(
  `${n} jobs, 20 ms apart: enqueue call p50 ${pct(enqueue, 0.5)} ms; notification received p50 ${pct(notified, 0.5)} ms; ` +
    `claimed p50 / p95 / p99 ${pct(claimed, 0.5)} / ${pct(claimed, 0.95)} / ${pct(claimed, 0.99)} ms`,
);
await producer.query('DROP TABLE latency_floor');
await Promise.all([producer.end(), listener.end(), worker.end()]);
