import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { RecurringSchedules } from 'nestjs-durable-jobs';
import { ScheduleNameDto } from './schedule-name.dto.js';

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
  async pause(@Param() { name }: ScheduleNameDto) {
    await this.schedules.pause(name);
    return this.schedules.get(name);
  }

  @Post(':name/resume')
  @HttpCode(200)
  async resume(@Param() { name }: ScheduleNameDto) {
    await this.schedules.resume(name);
    return this.schedules.get(name);
  }
}
