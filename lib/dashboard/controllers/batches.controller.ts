import { Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { JobsAdmin } from '../../admin/jobs-admin.service.js';
import { JobsNotFoundError, type BatchListFilter, type BatchState, type JobState } from '../../model/index.js';
import { JobQueue } from '../../queue/job-queue.service.js';
import { DashboardGraphs } from '../dashboard-graphs.service.js';
import { integer, one, onlyKnown, type Query as Q } from '../dashboard-input.js';
import type { DashboardConfig } from '../dashboard-options.js';
import { DashboardRoutes } from './dashboard-routes.js';

/** Batches: the list with counts, one batch, its members and its graph; cancel. */
export function batchesController(config: DashboardConfig) {
  @DashboardRoutes(config)
  class JobsDashboardBatchesController {
    constructor(
      readonly admin: JobsAdmin,
      readonly jobs: JobQueue,
      readonly graphs: DashboardGraphs,
    ) {}

    /** ?state=failed&name=&before=<next>&limit= — newest first. */
    @Get('api/batches')
    list(@Query() query: Q) {
      const q = onlyKnown(query, ['state', 'name', 'before', 'limit']);
      const filter: BatchListFilter = {};
      const state = one(q, 'state');
      if (state !== undefined) filter.state = state as BatchState;
      const name = one(q, 'name');
      if (name !== undefined) filter.name = name;
      const before = one(q, 'before');
      if (before !== undefined) filter.before = before;
      const limit = integer(q, 'limit', 1, 500);
      if (limit !== undefined) filter.limit = limit;
      return this.admin.listBatches(filter);
    }

    @Get('api/batches/:id')
    async status(@Param('id') id: string) {
      const batch = await this.admin.batchStatus(id);
      if (!batch) {
        throw new JobsNotFoundError(
          `Jobs dashboard: no batch ${id}. Potential fix: it may have been deleted or purged; go back to the list of batches.`,
        );
      }
      return batch;
    }

    @Get('api/batches/:id/graph')
    graph(@Param('id') id: string) {
      return this.graphs.batchGraph(id);
    }

    /** ?state=failed&skip=0&take=100 — in the batch's order. */
    @Get('api/batches/:id/members')
    members(@Param('id') id: string, @Query() query: Q) {
      const q = onlyKnown(query, ['state', 'skip', 'take']);
      const state = one(q, 'state') as JobState | undefined;
      const skip = integer(q, 'skip', 0, 2_147_483_647);
      const take = integer(q, 'take', 1, 500);
      return this.admin.batchMembers(id, {
        ...(state !== undefined ? { state } : {}),
        ...(skip !== undefined ? { skip } : {}),
        ...(take !== undefined ? { take } : {}),
      });
    }

    @Post('api/batches/:id/cancel')
    @HttpCode(204)
    cancel(@Param('id') id: string) {
      return this.jobs.cancelBatch(id);
    }
  }
  return JobsDashboardBatchesController;
}
