import { Injectable, Logger } from '@nestjs/common';

/** Stands in for a mail provider: it logs and remembers what it "sent". */
@Injectable()
export class Mailer {
  private readonly logger = new Logger('Mailer');
  readonly sent: Array<{ orderId: number; email: string }> = [];

  async sendReceipt(orderId: number, email: string, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    await new Promise((r) => setTimeout(r, 20));
    this.sent.push({ orderId, email });
    this.logger.log(`Receipt for order #${orderId} sent to ${email}`);
  }
}
