// jobs.ts: a plain job, one in steps, one for each order, and a cron job ticking every second.
import { Injectable } from '@nestjs/common';
import { Cron, Job, type JobContext, type JobHandler } from 'nestjs-durable-jobs';

/** The cron job's runs in this process, by job id. */
@Injectable()
export class Ticks {
  readonly jobIds = new Set<string>();
}

@Job('consumer-double', { queue: 'consumer' })
export class Double implements JobHandler<{ n: number }, { doubled: number }> {
  run({ n }: { n: number }) {
    return { doubled: n * 2 };
  }
}

@Job('consumer-steps')
export class StepByStep implements JobHandler<{ from: number }, { total: number }> {
  async run({ from }: { from: number }, ctx: JobContext) {
    const first = await ctx.step('first', async () => from + 1);
    const second = await ctx.step('second', async () => first * 2);
    return { total: second };
  }
}

@Job('consumer-receipt', { queue: 'emails' })
export class Receipt implements JobHandler<{ orderId: number }, { receiptFor: number }> {
  run({ orderId }: { orderId: number }) {
    return { receiptFor: orderId };
  }
}

@Cron('* * * * * *')
@Job('consumer-tick')
export class Tick implements JobHandler<void> {
  constructor(private readonly ticks: Ticks) {}

  run(_payload: void, ctx: JobContext) {
    this.ticks.jobIds.add(ctx.jobId);
  }
}
