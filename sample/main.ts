import { JobsError } from 'nestjs-durable-jobs';
import { startSample } from './start-sample.js';

/** `npm start`. Its settings (PORT, HOST, DATABASE_URL, JOBS_DATA_DIR) are read in start-sample.ts. */
startSample({ demo: true }).catch((error: unknown) => {
  // A JobsError names the problem and its fix; a stack trace would only bury them.
  console.error(error instanceof JobsError ? error.message : error);
  process.exit(1);
});
