import { IsUUID } from 'class-validator';

/** `:id` of GET /batches/:id. */
export class BatchIdDto {
  // 'loose' accepts what the library accepts: an id of the right shape that names no batch is a 404, not a 400.
  @IsUUID('loose', {
    message:
      'id must be a batch id, the batchId that POST /imports returned (a UUID such as 01937c5e-1a2b-7c3d-8e4f-5a6b7c8d9e0f)',
  })
  id!: string;
}
