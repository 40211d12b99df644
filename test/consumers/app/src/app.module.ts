// app.module.ts: the app's own TypeORM DataSource, shared with the jobs module (what makes an
// enqueue with `{ manager }` transactional), @nestjs/schedule, and terminus for the health check.
import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { JobsModule } from 'nestjs-durable-jobs';
import { JobsHealthIndicator } from 'nestjs-durable-jobs/health';
import { Double, Receipt, StepByStep, Tick, Ticks } from './jobs.js';

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL }),
    ScheduleModule.forRoot(),
    TerminusModule,
    JobsModule.forRootAsync({
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => ({
        dataSource,
        schema: process.env.JOBS_SCHEMA,
        worker: { pollInterval: 100 },
      }),
    }),
  ],
  providers: [Ticks, Double, StepByStep, Receipt, Tick, JobsHealthIndicator],
})
export class AppModule {}
