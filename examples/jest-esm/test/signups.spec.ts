import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { JobsTester, JobsTestingModule } from 'nestjs-durable-jobs/testing';
import { Mailer } from '../src/mailer.service.js';
import { SendWelcomeEmail } from '../src/send-welcome-email.job.js';
import { SignupsModule } from '../src/signups.module.js';
import { Signups } from '../src/signups.service.js';

describe('signing up (jobs run when the test drains them)', () => {
  let app: INestApplication;
  let jobs: JobsTester;

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({
      // In place of the app's JobsModule.forRoot(…): same options, a schema of this app's own.
      imports: [JobsTestingModule.forRoot({ connection: process.env.DATABASE_URL }), SignupsModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    jobs = app.get(JobsTester);
  });

  afterEach(async () => {
    await app.close(); // drops the schema
  });

  it('enqueues a welcome email, which a drain sends', async () => {
    await app.get(Signups).signUp('ada@example.com');
    await jobs.expectEnqueued({ name: SendWelcomeEmail, payload: { email: 'ada@example.com' } });
    expect(app.get(Mailer).sent.size).toBe(0);

    const ran = await jobs.drain();

    expect(ran).toEqual([expect.objectContaining({ name: 'send-welcome-email', outcome: 'succeeded' })]);
    expect([...app.get(Mailer).sent.values()]).toEqual([{ to: 'ada@example.com', subject: 'Welcome!' }]);
  });

  it('retries after a failure once the backoff has passed, without waiting for it', async () => {
    jobs.failNext(SendWelcomeEmail, new Error('SMTP is down'));
    await app.get(Signups).signUp('grace@example.com');

    expect(await jobs.drain()).toEqual([
      expect.objectContaining({ outcome: 'retry', error: expect.objectContaining({ message: 'SMTP is down' }) }),
    ]);
    expect(await jobs.drain()).toEqual([]); // due again in 30 s
    await jobs.advance(30_000);
    expect(await jobs.drain()).toEqual([expect.objectContaining({ attempt: 2, outcome: 'succeeded' })]);
    expect(app.get(Mailer).sent.size).toBe(1);
  });

  it('sends once when its worker dies after sending, before the outcome is saved', async () => {
    jobs.dieAfterWork(SendWelcomeEmail);
    const { welcomeJobId } = await app.get(Signups).signUp('alan@example.com');
    expect(await jobs.drain()).toEqual([expect.objectContaining({ id: welcomeJobId, outcome: 'died' })]);

    await jobs.advance(30_001); // past the lease (worker.lease, 30 s by default): the job is taken back
    expect(await jobs.drain()).toEqual([
      expect.objectContaining({ id: welcomeJobId, attempt: 2, outcome: 'succeeded' }),
    ]);
    expect(app.get(Mailer).sent.size).toBe(1);
  });
});
