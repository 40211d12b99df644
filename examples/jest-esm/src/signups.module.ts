import { Module } from '@nestjs/common';
import { Mailer } from './mailer.service.js';
import { SendWelcomeEmail } from './send-welcome-email.job.js';
import { Signups } from './signups.service.js';

/** The feature under test. The app's root module imports it beside JobsModule.forRoot(…). */
@Module({ providers: [Mailer, SendWelcomeEmail, Signups], exports: [Signups, Mailer] })
export class SignupsModule {}
