import { Logger } from '@nestjs/common';
import type { QueueConfig, QueueStorage } from '../../../lib/storage/queues/queue-storage.interface.js';
import { QueueSettings } from '../../../lib/worker/claiming/queue-settings.js';

/** The worker's copy of the queues' settings: which queues a group limit makes limited. */
const config = (queue: string, o: Partial<QueueConfig>): QueueConfig => ({
  queue,
  concurrency: null,
  concurrencySource: 'code',
  rateLimit: null,
  rateSource: 'code',
  service: null,
  paused: false,
  hasGroups: false,
  hasSerial: false,
  groupMinInflight: 2,
  groupShare: 0.5,
  groupConcurrency: null,
  groupRateLimit: null,
  groupLimits: 0,
  names: [],
  ...o,
});

async function settingsOf(configs: QueueConfig[]): Promise<QueueSettings> {
  const storage = { configs: () => Promise.resolve(configs) } as unknown as QueueStorage;
  const settings = new QueueSettings(storage, new Logger('test'));
  await settings.refresh();
  return settings;
}

it("counts a grouped queue with a per-group limit (the default or a group's own) as limited, not one without", async () => {
  const settings = await settingsOf([
    config('default-limit', { hasGroups: true, groupConcurrency: 2 }),
    config('own-limit', { hasGroups: true, groupLimits: 1 }),
    config('groups-alone', { hasGroups: true }),
    config('no-groups-yet', { groupConcurrency: 2 }),
  ]);
  expect(['default-limit', 'own-limit', 'groups-alone', 'no-groups-yet'].map((q) => settings.limited(q))).toEqual([
    true,
    true,
    false,
    false,
  ]);
  // Groups make a queue controlled whether or not they are limited; a default with no groups yet does not.
  expect(['default-limit', 'own-limit', 'groups-alone', 'no-groups-yet'].map((q) => settings.controlled(q))).toEqual([
    true,
    true,
    true,
    false,
  ]);
});

it('counts a queue whose groups have a rate limit as controlled and rated, never limited as a whole', async () => {
  const settings = await settingsOf([
    config('group-rated', { hasGroups: true, groupRateLimit: { max: 10, per: 1_000 } }),
    config('no-groups-yet', { groupRateLimit: { max: 10, per: 1_000 }, concurrency: 5 }),
    config('groups-alone', { hasGroups: true }),
  ]);
  const queues = ['group-rated', 'no-groups-yet', 'groups-alone'];
  // Through the controlled claim, which counts each group's starts, even before its first grouped job.
  expect(queues.map((q) => settings.controlled(q))).toEqual([true, true, true]);
  // Its claimed jobs get start deadlines and no depth, as any rate-limited queue's.
  expect(queues.map((q) => settings.rated(q))).toEqual([true, true, false]);
  // Nothing is claimed ahead: the window counts starts.
  expect(settings.limitedAsAWhole('no-groups-yet')).toBe(false);
});
