import { IsISO8601, IsOptional, MaxLength } from 'class-validator';

const SINCE = 'since must be an ISO 8601 date or time, such as since=2026-11-01 or since=2026-11-01T10:00:00Z';

/** GET /stats. */
export class StatsQueryDto {
  // Strict: Date.parse alone takes "1" for the year 2001.
  @IsOptional()
  @MaxLength(64, { message: SINCE })
  @IsISO8601({ strict: true }, { message: SINCE })
  since?: string;
}
