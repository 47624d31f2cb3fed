// One pass: observe, plan, and (unless told not to) carry the plan out and verify.
// Shared by the daemon's loop and by the one-shot `plan` / `apply` commands.
import type { Logger } from 'pino';
import { describeShape, plan } from '../core/planner.js';
import type { DesiredMode, Observation, Plan, PlannerConfig } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';
import { observe, type OvnkubeProbe } from './observe.js';

export interface ReconcileDeps {
  dataplane: Dataplane;
  probe: OvnkubeProbe;
  log: Logger;
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
  const observed = await observe(deps.dataplane, config.serviceCidrs, deps.probe);
  const planned = plan({ desired, config, observed });
  if (planned.actions.length === 0 || !apply || config.dryRun) {
    return { planned, final: planned, observed, applied: 0 };
  }
  deps.log.info(
    { plan: planned.actions.map((a) => ({ cidr: a.cidr.text, from: describeShape(a.from), to: describeShape(a.to), reason: a.reason })) },
    'carrying out plan',
  );
  let applied = 0;
  for (const action of planned.actions) {
    await deps.dataplane.replaceRoute({
      prefix: action.cidr,
      table: action.table,
      priority: action.priority,
      protocol: action.protocol,
      scope: action.scope,
      type: action.type,
      gateway: action.to.via!,
      oif: action.oif,
      mtu: action.to.mtu,
    });
    applied++;
    deps.log.info(
      { cidr: action.cidr.text, before: describeShape(action.from), after: describeShape(action.to), table: action.table, priority: action.priority },
      `replaced route ${action.cidr.text}: ${describeShape(action.from)} -> ${describeShape(action.to)}`,
    );
  }
  const after = await observe(deps.dataplane, config.serviceCidrs, deps.probe);
  const final = plan({ desired, config, observed: after });
  if (final.actions.length > 0) {
    throw new VerifyError(`after replacing, still out of sync: ${final.actions.map((a) => a.reason).join('; ')}`);
  }
  return { planned, final, observed: after, applied };
}
