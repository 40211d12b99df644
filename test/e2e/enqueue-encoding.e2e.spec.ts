import { Module, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Job, JobQueue, JobsModule, type JobHandler } from 'nestjs-durable-jobs';
import { databaseUrl, dropSchemas, uniqueSchema } from '../support/database.js';

// enqueueMany sends its rows as PostgreSQL array literals built by hand, so
// every character that means something inside one must come back unchanged.
@Job('encoding-probe')
class EncodingProbe implements JobHandler {
  run() {}
}

const schema = uniqueSchema('encoding');
let app: INestApplicationContext;

beforeAll(async () => {
  @Module({
    imports: [
      JobsModule.forRoot({
        connection: databaseUrl(),
        schema,
        worker: { enabled: false },
        unregisteredJobs: 'ignore',
      }),
    ],
    providers: [EncodingProbe],
  })
  class AppModule {}
  const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
  app = await ref.createNestApplication({ logger: false }).init();
});

afterAll(async () => {
  await app?.close();
  await dropSchemas(schema);
});

it('payloads and queue names with quotes, backslashes, braces, commas, NULL and unicode survive a bulk enqueue', async () => {
  const payloads: unknown[] = [
    { text: 'say "hi"', path: 'C:\\temp\\new', braces: '{a,b}', comma: 'a, b', word: 'NULL' },
    'NULL',
    '',
    null,
    '\\"',
    ['{', '}', ',', '"', '\\'],
    { emoji: 'ünïcödé ✓ 🚀', newline: 'a\nb\tc' },
    42.5,
    { nested: { deeper: [1, { x: '"\\"' }] } },
  ];
  const queues = ['default', 'with space', 'q"uote', 'back\\slash', '{braced}', 'a,b', 'NULL', 'ünï', 'default'];
  const queue = app.get(JobQueue);
  const jobs = await queue.enqueueMany(
    payloads.map((payload, i) => ({ job: EncodingProbe, payload, options: { queue: queues[i], priority: i - 4 } })),
  );
  expect(jobs).toHaveLength(payloads.length);
  for (const [i, { id }] of jobs.entries()) {
    const info = await queue.get(id);
    expect(info).toMatchObject({ name: 'encoding-probe', queue: queues[i], priority: i - 4, state: 'queued' });
    expect(info!.payload).toEqual(payloads[i]);
  }
});
