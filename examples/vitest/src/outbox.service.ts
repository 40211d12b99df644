import { Injectable } from '@nestjs/common';

/** Stands in for an email provider: what was sent, in order. */
@Injectable()
export class Outbox {
  readonly sent: string[] = [];
}
