import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { RecurringSchedules } from 'nestjs-durable-jobs';

@Controller('schedules')
export class SchedulesController {
  constructor(private readonly schedules: RecurringSchedules) {}

  /** Every schedule with its last run, next run and paused state. */
  @Get()
  list() {
    return this.schedules.list();
  }

  @Post(':name/pause')
  @HttpCode(200)
  async pause(@Param('name') name: string) {
    await this.schedules.pause(name);
    return this.schedules.get(name);
  }

  @Post(':name/resume')
  @HttpCode(200)
  async resume(@Param('name') name: string) {
    await this.schedules.resume(name);
    return this.schedules.get(name);
  }
}
