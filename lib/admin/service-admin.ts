import {
  checkName,
  databaseCall,
  JobsError,
  JobsNotFoundError,
  SERVICE_INSTANCE_ALIVE_MS,
  type Clock,
  type ForgottenService,
  type ServiceInfo,
} from '../model/index.js';
import type { ServiceStorage } from '../storage/services/service-storage.interface.js';

/** JobsAdmin.services(). */
export function listServices(storage: ServiceStorage, clock: Clock): Promise<ServiceInfo[]> {
  const aliveSince = new Date(clock.now().getTime() - SERVICE_INSTANCE_ALIVE_MS);
  return databaseCall('JobsAdmin.services()', () => storage.list(aliveSince));
}

/** JobsAdmin.forgetService(): only for a service none of whose instances runs. */
export async function forgetService(storage: ServiceStorage, clock: Clock, service: string): Promise<ForgottenService> {
  const where = `JobsAdmin.forgetService('${String(service)}')`;
  const name = checkName(where, 'service', service, 'billing');
  const known = (await listServices(storage, clock)).find((s) => s.service === name);
  if (!known) {
    throw new JobsNotFoundError(
      `${where}: no service '${name}' is known. Potential fix: see JobsAdmin.services() (CLI: services).`,
    );
  }
  const live = known.builds.reduce((n, b) => n + b.instances, 0);
  if (live > 0) {
    throw new JobsError(
      `${where}: ${live} instance(s) of the service are running, and each would write its declarations again. ` +
        `Potential fix: stop them first.`,
    );
  }
  return databaseCall(where, () => storage.forget(name));
}
