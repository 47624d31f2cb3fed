// One pass: observe, plan, and (unless told not to) carry the plan out and verify.
// Shared by the daemon's loop and by the one-shot `plan` / `apply` commands.
import type { Logger } from 'pino';
import { describeShape, plan } from '../core/planner.js';
import type { DesiredMode, Observation, Plan, PlannerConfig, ReplaceAction } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';
import { observe, type OvnkubeProbe } from './observe.js';

export interface ReconcileDeps {
  dataplane: Dataplane;
  probe: OvnkubeProbe;
  log: Logger;
}

/** Hooks of the daemon's loop (fight tracking); the one-shot commands pass none. */
export interface ReconcileHooks {
  /** Called before each replace; true means: leave this CIDR alone. */
  holdBack?: (action: ReplaceAction) => boolean;
  /** CIDRs whose repairs are suspended: not counted as out of sync when verifying. */
  isSuspended?: (cidr: string) => boolean;
  onApplied?: (action: ReplaceAction) => void;
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
  hooks: ReconcileHooks = {},
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
    if (hooks.holdBack?.(action)) continue;
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
    hooks.onApplied?.(action);
    deps.log.info(
      { cidr: action.cidr.text, before: describeShape(action.from), after: describeShape(action.to), table: action.table, priority: action.priority },
      `replaced route ${action.cidr.text}: ${describeShape(action.from)} -> ${describeShape(action.to)}`,
    );
  }
  const after = await observe(deps.dataplane, config.serviceCidrs, deps.probe);
  const final = plan({ desired, config, observed: after });
  const remaining = final.actions.filter((a) => !hooks.isSuspended?.(a.cidr.text));
  if (applied > 0 && remaining.length > 0) {
    throw new VerifyError(`after replacing, still out of sync: ${remaining.map((a) => a.reason).join('; ')}`);
  }
  return { planned, final, observed: after, applied };
}
