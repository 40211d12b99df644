import { IsString, Matches, MaxLength } from 'class-validator';
import { MAX_NAME_LENGTH, PRINTABLE } from '../common/validation.js';

const NAME = `name must be a schedule's name as GET /schedules lists it (1 to ${MAX_NAME_LENGTH} printable characters), such as nightly-report`;

/** `:name` of POST /schedules/:name/pause and /resume. */
export class ScheduleNameDto {
  @IsString({ message: NAME })
  @MaxLength(MAX_NAME_LENGTH, { message: NAME })
  @Matches(PRINTABLE, { message: NAME })
  name!: string;
}
