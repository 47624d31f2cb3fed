// The one-shot commands' pass (`plan`, `apply`): observe, plan, and for `apply` carry
// the replaces out, all or none, and verify. No restart: the running agent owns that.
// `apply` journals its migration through beforeReplaces, and may be stopped between
// two replaces (stopRequested): then the replaces done stay done (InterruptedError).
import type { Logger } from 'pino';
import { plan, watchedOf } from '../core/planner.js';
import type { DesiredMode, Observation, Plan, PlannerConfig } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';
import { applyReplaces, type StopRequested } from './execute.js';
import { observe, type OvnkubeProbe } from './observe.js';

export interface ReconcileDeps {
  dataplane: Dataplane;
  probe: OvnkubeProbe;
  log: Logger;
  /** Called with the plan before its first replace (apply journals it there); a throw acts on nothing. */
  beforeReplaces?: (planned: Plan, observed: Observation) => Promise<void>;
  stopRequested?: StopRequested;
}

export interface ReconcileResult {
  /** The plan as made before acting. */
  planned: Plan;
  /** The plan after acting (re-observed): what the node looks like now. */
  final: Plan;
  observed: Observation;
  applied: number;
}

export class VerifyError extends Error {
  readonly code = 'ERR_GWMODE_VERIFY';
}

export async function reconcile(
  deps: ReconcileDeps,
  desired: DesiredMode,
  config: PlannerConfig,
  apply: boolean,
): Promise<ReconcileResult> {
  const watched = watchedOf(config);
  const observed = await observe(deps.dataplane, watched, deps.probe);
  const planned = plan({ desired, config, observed });
  if (planned.actions.length === 0 || planned.blocked || !apply || config.dryRun) {
    return { planned, final: planned, observed, applied: 0 };
  }
  await deps.beforeReplaces?.(planned, observed);
  await applyReplaces(deps.dataplane, deps.log, planned.actions, undefined, deps.stopRequested);
  const after = await observe(deps.dataplane, watched, deps.probe);
  const final = plan({ desired, config, observed: after });
  if (final.actions.length > 0) {
    throw new VerifyError(
      `after replacing, still out of sync: ${final.actions.map((a) => a.reason.message).join('; ')}`,
    );
  }
  return { planned, final, observed: after, applied: planned.actions.length };
}
