import { Injectable } from '@nestjs/common';

/** Stands in for an email provider: remembers what it sent, keyed by an idempotency key. */
@Injectable()
export class Mailer {
  readonly sent = new Map<string, { to: string; subject: string }>();

  async send(idempotencyKey: string, to: string, subject: string): Promise<void> {
    // A provider that honours idempotency keys sends a repeated request once.
    if (!this.sent.has(idempotencyKey)) this.sent.set(idempotencyKey, { to, subject });
  }
}
