import { Transform, type TransformFnParams } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
} from 'class-validator';
import type { JobListFilter, JobState } from 'nestjs-durable-jobs';
import { MAX_NAME_LENGTH, PRINTABLE } from '../common/validation.js';

// A Record over JobState makes the compiler list every state, so a new one cannot be left out here.
const STATES = Object.keys({
  waiting: 1,
  queued: 1,
  active: 1,
  succeeded: 1,
  failed: 1,
  cancelled: 1,
  skipped: 1,
} satisfies Record<JobState, 1>) as JobState[];

/** `?state=failed&state=queued` arrives as an array, `?state=failed,queued` as one string: both become a list. */
const toList = ({ value }: TransformFnParams): unknown =>
  typeof value === 'string' || Array.isArray(value)
    ? [value].flat().flatMap((v: unknown) => (typeof v === 'string' ? v.split(',') : [v]))
    : value;

/** A query value is a string: "20" becomes 20; anything else stays as sent, for @IsInt to refuse by name. */
const toInteger = ({ value }: TransformFnParams): unknown =>
  typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value;

const STATE = `state must be one or more of ${STATES.join(', ')}, such as state=failed or state=failed,queued`;
const QUEUE = `queue must be a queue's name, given once (1 to ${MAX_NAME_LENGTH} printable characters), such as queue=emails`;
const NAME = `name must be a job's name, given once (1 to ${MAX_NAME_LENGTH} printable characters), such as name=send-receipt`;
const BEFORE = 'before must be the "next" of the previous page, given once (a job id, a UUID)';
const LIMIT = 'limit must be a whole number from 1 to 500, given once, such as limit=50 (page on with before=<next>)';

/** GET /jobs: the filter of JobsMonitor.jobs(), from the query string. */
export class ListJobsQueryDto implements JobListFilter {
  @IsOptional()
  @Transform(toList)
  @IsArray({ message: STATE })
  @ArrayMaxSize(STATES.length, { message: STATE })
  @IsIn(STATES, { each: true, message: STATE })
  state?: JobState[];

  @IsOptional()
  @IsString({ message: QUEUE })
  @MaxLength(MAX_NAME_LENGTH, { message: QUEUE })
  @Matches(PRINTABLE, { message: QUEUE })
  queue?: string;

  @IsOptional()
  @IsString({ message: NAME })
  @MaxLength(MAX_NAME_LENGTH, { message: NAME })
  @Matches(PRINTABLE, { message: NAME })
  name?: string;

  @IsOptional()
  @IsUUID('loose', { message: BEFORE })
  before?: string;

  @IsOptional()
  @Transform(toInteger)
  @IsInt({ message: LIMIT })
  @Min(1, { message: LIMIT })
  @Max(500, { message: LIMIT })
  limit?: number;
}
