import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
} from 'class-validator';
import { INT4_MAX, MAX_NAME_LENGTH, PRINTABLE } from '../common/validation.js';

/** Each file is a job of the batch: the bound keeps one request from enqueueing without end. */
export const MAX_IMPORT_FILES = 100;

const NAME = `name must be 1 to ${MAX_NAME_LENGTH} printable characters, such as "import-october" (or leave it out for import-<time>)`;
const FILES = `files must be a list of 1 to ${MAX_IMPORT_FILES} file names, each 1 to ${MAX_NAME_LENGTH} printable characters, such as ["a.csv", "b.csv"]`;
const USER = `userId must be a whole number from 1 to ${INT4_MAX}, such as 7 (or leave it out for 1)`;

/** POST /imports. */
export class CreateImportDto {
  @IsOptional()
  @IsString({ message: NAME })
  @MaxLength(MAX_NAME_LENGTH, { message: NAME })
  @Matches(PRINTABLE, { message: NAME })
  name?: string;

  @IsArray({ message: FILES })
  @ArrayNotEmpty({ message: FILES })
  @ArrayMaxSize(MAX_IMPORT_FILES, { message: FILES })
  @IsString({ each: true, message: FILES })
  @MaxLength(MAX_NAME_LENGTH, { each: true, message: FILES })
  @Matches(PRINTABLE, { each: true, message: FILES })
  files!: string[];

  @IsOptional()
  @IsInt({ message: USER })
  @Min(1, { message: USER })
  @Max(INT4_MAX, { message: USER })
  userId?: number;
}
