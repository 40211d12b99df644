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
import { JOB_LIST_STATES, type JobListState, type JobSearch } from 'nestjs-durable-jobs';
import { MAX_NAME_LENGTH, PRINTABLE } from '../common/validation.js';

// The states GET /stats counts by (scheduled: queued for later), so every count there can be listed here.
const STATES: readonly JobListState[] = JOB_LIST_STATES;

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

/** GET /jobs: the search of JobsAdmin.search(), from the query string. */
export class ListJobsQueryDto implements JobSearch {
  @IsOptional()
  @Transform(toList)
  @IsArray({ message: STATE })
  @ArrayMaxSize(STATES.length, { message: STATE })
  @IsIn(STATES, { each: true, message: STATE })
  state?: JobListState[];

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
