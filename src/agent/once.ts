// The one-shot commands (`plan`, `apply`, `rollback`) as one pass of the agent's own
// pipeline: observe (links, addresses, routes, ovnkube-node from /proc; the host's
// os-release and ovnkube.conf come in the config, the journal through its keeper) ->
// identify the platform and plan (core/planner.ts; core/rollback.ts for a rollback, whose
// platform refusals are the planner's) -> decide (core/decide.ts, as the agent does) ->
// execute (steps.ts, the agent's executor: journaled before the first replace, all or
// none, the record restored when the kernel refused) -> verify -> record. A command
// chooses only its target, whether it may act, and how it reports. No restart: the
// agent owns that (a one-shot decision is taken as under --restart none).
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { decide, type RestartSettings, type Step } from '../core/decide.js';
import { transition, type Migration } from '../core/migration.js';
import { plan, watchedOf } from '../core/planner.js';
import type { Reason } from '../core/reasons.js';
import { NO_RECORDER } from '../core/recorder.js';
import { planRollback } from '../core/rollback.js';
import { sameNextHop } from '../core/route.js';
import type { DesiredMode, Plan, PlannerConfig, ReplaceAction } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';
import { parseCidr } from '../net/cidr.js';
import { VerifyError, type StopRequested } from './execute.js';
import type { JournalKeeper } from './journal-keeper.js';
import { observe, type OvnkubeProbe } from './observe.js';
import { execute, type ExecuteParts } from './steps.js';

/** The migration replaced routes the given service CIDRs do not name: a bad flag (exit 2). */
export class RollbackCidrsError extends Error {
  readonly code = 'ERR_GWMODE_ROLLBACK_CIDRS';
}

/** What a command wants: the mode file's mode (`plan`, `apply`), or the journal's migration put back (`rollback`). */
export type Target = { mode: DesiredMode } | { rollback: { cidrsFrom: string } };

export interface OnceDeps {
  dataplane: Dataplane;
  probe: OvnkubeProbe;
  log: Logger;
  clock: Clock;
  /** The node's journal, loaded; null for `plan`, which reads none and never acts. */
  journal: JournalKeeper | null;
  /** Carry the decision out (`apply`, `rollback --yes`); otherwise only decide. */
  act: boolean;
  /** Called before the first change (the journal write); throws when the command was abandoned. */
  beginChanges?: () => void;
  stopRequested?: StopRequested;
}

export interface OnceResult {
  /** A mode target's plan before acting, and of the node after (the same when nothing was done); null for a rollback. */
  planned: Plan | null;
  final: Plan | null;
  /** The replaces decided; carried out when `applied`. */
  actions: ReplaceAction[];
  applied: boolean;
  /** A rollback's refusals (NothingToRollBack among them); the planner's reasons are in the plans. */
  refusals: Reason[];
  /** The migration on record before the command. */
  migration: Migration | null;
}

/** A one-shot command requests no restart: it decides as the agent does under --restart none. */
const NO_RESTART: RestartSettings = {
  strategy: 'none',
  limit: { minIntervalMs: 0, maxPerHour: 0 },
  timeoutMs: 0,
  settleMs: 0,
  retryBaseMs: 0,
  retryMaxMs: 0,
  modeChecked: false,
};

interface Decided {
  planned: Plan | null;
  actions: ReplaceAction[];
  refusals: Reason[];
  steps: Step[];
  /** The record once the steps are carried out and verified (a rollback's done mark). */
  done?: (now: number) => Migration;
}

export async function once(deps: OnceDeps, config: PlannerConfig, target: Target): Promise<OnceResult> {
  const watched = watchedOf(config);
  const migration = deps.journal?.data.migration ?? null;
  if ('rollback' in target) assertNamed(migration, config, target.rollback.cidrsFrom);
  const observed = await observe(deps.dataplane, watched, deps.probe);
  const now = deps.clock.now();
  let d: Decided;
  if ('mode' in target) {
    const planned = plan({ desired: target.mode, config, observed });
    const j = deps.journal;
    const steps = j
      ? decide({
          plan: planned,
          desired: target.mode.mode,
          migration,
          restarts: j.data.restarts,
          ovnkube: observed.ovnkube,
          target: null,
          settings: NO_RESTART,
          now,
        }).steps
      : [];
    d = { planned, actions: planned.actions, refusals: [], steps };
  } else {
    const rb = planRollback(migration, observed, config);
    // Null only with nothing on record, where the plan holds no action.
    const begun = migration && transition(migration, { kind: 'rollback-begun' }, now);
    d = {
      planned: null,
      ...rb,
      steps:
        rb.actions.length === 0 || begun === null
          ? []
          : [
              { kind: 'journal', migration: begun },
              ...rb.actions.map((action) => ({ kind: 'replace' as const, action })),
            ],
      ...(begun && { done: (at: number) => transition(begun, { kind: 'rolled-back' }, at) }),
    };
  }
  const result = { planned: d.planned, final: d.planned, actions: d.actions, refusals: d.refusals, migration };
  if (!deps.act || d.steps.length === 0 || deps.journal === null) return { ...result, applied: false };
  const parts: ExecuteParts = {
    journal: deps.journal,
    writes: deps.dataplane,
    recorder: NO_RECORDER,
    log: deps.log,
    strategy: NO_RESTART.strategy,
    applied: () => undefined,
    ...(deps.stopRequested ? { stopRequested: deps.stopRequested } : {}),
  };
  deps.beginChanges?.();
  await execute(parts, { records: [], steps: d.steps }, 'mode' in target ? target.mode.mode : null);
  const after = await observe(deps.dataplane, watched, deps.probe);
  const wrong = d.actions.filter(
    (a) => !(after.routes.get(a.key.prefix) ?? []).some((r) => sameNextHop(r.nextHop, a.to)),
  );
  if (wrong.length > 0)
    throw new VerifyError(`after replacing, not as decided: ${wrong.map((a) => a.key.prefix).join(', ')}`);
  if (d.done) {
    const record = { kind: 'record' as const, migration: d.done(deps.clock.now()), what: 'the rollback, done' };
    await execute(parts, { records: [record], steps: [] }, null);
  }
  const final = 'mode' in target ? plan({ desired: target.mode, config, observed: after }) : null;
  return { ...result, final, applied: true };
}

/** Only the given service CIDRs are looked at: a migration route outside them would read as "no route" while it is there. */
function assertNamed(migration: Migration | null, config: PlannerConfig, from: string): void {
  const named = new Set(config.serviceCidrs.map((c) => c.text));
  // A /0 is left to planRollback, which refuses it with its reason (no flag could name it).
  const unnamed = (migration?.routes ?? [])
    .map((r) => parseCidr(r.key.prefix))
    .filter((c) => c.length > 0 && !named.has(c.text))
    .map((c) => c.text);
  if (unnamed.length > 0) {
    throw new RollbackCidrsError(
      `rollback: the journal's migration replaced ${unnamed.join(', ')}, which ${from} (${[...named].join(', ')}) does not name: give the service CIDRs it was made with`,
    );
  }
}
