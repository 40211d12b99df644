import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Job, JobQueue, JobsModule, type JobContext } from 'nestjs-durable-jobs';

const seen: string[] = [];
@Job('smoke')
class Smoke {
  async run(p: { n: number }, ctx: JobContext) {
    seen.push(`${p.n}:${ctx.attempt}`);
    return { doubled: p.n * 2 };
  }
}

@Module({ providers: [Smoke] })
class M {}

it('runs a job', async () => {
  const ref = await Test.createTestingModule({
    imports: [JobsModule.forRoot({ connection: process.env.DATABASE_URL!, schema: 'smoke_' + process.pid }), M],
  }).compile();
  const app = ref.createNestApplication();
  await app.init();
  const q = app.get(JobQueue);
  const { id } = await q.enqueue(Smoke, { n: 21 });
  for (let i = 0; i < 50; i++) {
    const j = await q.get(id);
    if (j?.state === 'succeeded') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const job = await q.get(id);
  expect(job?.state).toBe('succeeded');
  expect(job?.result).toEqual({ doubled: 42 });
  expect(job?.executions).toHaveLength(1);
  await app.close();
});
