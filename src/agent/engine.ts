// The one pipeline every command runs (docs/design.md, "The pipeline"): a command chooses its target,
// how many rounds may act (`plan` none, `apply` and `rollback --yes` one, a pass of `run` three).
import { decide, heard, needsTarget, restartHeld, type Decision, type RestartSettings } from '../core/decide.js';
import { suspensionsOf, trackFights, NO_FIGHTS, type FightState } from '../core/fights.js';
import { restartOwed, transition, type Migration } from '../core/migration.js';
import { must } from '../core/must.js';
import { plan, watchedOf } from '../core/planner.js';
import type { Reason } from '../core/reasons.js';
import { planRollback } from '../core/rollback.js';
import { renderNextHop, sameNextHop, type NextHop } from '../core/route.js';
import type { DesiredMode, Observation, Plan, PlannerConfig, ReplaceAction } from '../core/types.js';
import { coded } from '../dataplane/errors.js';
import type { Dataplane } from '../dataplane/types.js';
import { parseCidr } from '../net/cidr.js';
import type { Outcome } from '../status/report.js';
import { execute, VerifyError, type Effects } from './execute.js';

/** What a command wants: the mode file's mode (`plan`, `apply`, `run`), or the journal's migration put back (`rollback`). */
export type Target = { mode: DesiredMode } | { rollback: { cidrsFrom: string } };

/** ovnkube-node as /proc shows it; `routeEventOnly`: it may reuse a scan it proves current (OvnkubeScanner). */
export type OvnkubeProbe = (hint?: { routeEventOnly: boolean }) => Promise<Observation['ovnkube']>;

export interface Engine extends Effects {
  dataplane: Dataplane;
  probe: OvnkubeProbe;
}

export interface PassInput {
  config: PlannerConfig;
  target: Target;
  /** How many rounds may act; one more after the last that replaced only verifies and decides. */
  rounds: number;
  restart: RestartSettings;
  routeEventOnly?: boolean;
}

/** What passes hand on: the fights, and the last outcome (the status). */
export interface LoopState {
  fights: FightState;
  outcome?: Outcome & { decision: Decision };
}

/** A one-shot command decides as the agent does under --restart none. */
const NO_RESTART: RestartSettings = {
  strategy: 'none',
  limit: { minIntervalMs: 0, maxPerHour: 0 },
  timeoutMs: 0,
  settleMs: 0,
  retryBaseMs: 0,
  retryMaxMs: 0,
  modeChecked: false,
};

/** Rounds until one acts on nothing, and one more that only verifies if the last that may act replaced. */
export async function runPass(e: Engine, p: PassInput, s: LoopState) {
  let first: Awaited<ReturnType<typeof round>> | undefined;
  let replaced = new Map<string, NextHop>();
  for (let n = 0; ; n++) {
    const r = await round(e, p, s, n < p.rounds, n === 0, replaced);
    first ??= r;
    if (!r.acted) return { first, last: r };
    // A one-shot command puts on record only what it does; what happened meanwhile is the agent's to record.
    const { records, steps } = r.decision;
    await execute(e, s, { records: e.restarts ? records : [], steps }, 'mode' in p.target ? p.target.mode.mode : null);
    replaced = new Map(
      r.decision.steps.flatMap((step) => (step.kind === 'replace' ? [[step.action.key.prefix, step.action.to]] : [])),
    );
    const restarted = r.decision.steps.some((step) => step.kind === 'restart');
    if (replaced.size === 0 && !(restarted && n + 1 < p.rounds)) return { first, last: r };
  }
}

/** Observe, plan, verify what the last round replaced (docs/design.md, "The pipeline"), and decide. */
async function round(
  e: Engine,
  p: PassInput,
  s: LoopState,
  acting: boolean,
  first: boolean,
  replaced: Map<string, NextHop>,
) {
  const { config, target } = p;
  const runner = e.restarts?.runner;
  const answer = acting ? (runner?.answer ?? null) : null;
  // Links first, by name: the routes' interface names come from them (routes() asks the kernel for
  // any other). A rollback also reads the devices its routes left.
  const migration = e.journal.data.migration;
  const left = 'rollback' in target ? (migration?.routes ?? []).flatMap((r) => r.from.dev ?? []) : [];
  const watched = watchedOf(config);
  const links = await e.dataplane.links([...watched.links, ...left]);
  const families = watched.prefixes.map((c) => c.family);
  const [addresses, ovnkube, routes] = await Promise.all([
    e.dataplane.addresses(links, families),
    e.probe({ routeEventOnly: p.routeEventOnly ?? false }),
    e.dataplane.routes(watched.prefixes, links),
  ]);
  const observed: Observation = { links, addresses, routes, ovnkube };
  const now = e.clock.now();
  const desired = 'mode' in target ? target.mode : null;
  if (desired) s.fights = trackFights(s.fights, fightSeen(desired, config, observed, now));
  const suspensions = suspensionsOf(s.fights);
  const { planned, rb } = desired
    ? { planned: plan({ desired, config, observed, suspended: suspensions }), rb: null }
    : { planned: null, rb: planRollback(migration, observed, config) };
  const actions = rb ? rb.actions : planned.actions;
  // The verification: the kernel holds exactly what the last round wrote, whatever this round's plan says. A
  // route deleted since is the plan's to report (NoRoute: a 4.8/4.9 ovnkube-node's start-up flushes its mp0
  // routes, then adds them), not a failed write; a rollback is recorded done only on what it wrote.
  const wrong = [...replaced].flatMap(([prefix, to]) => {
    const held = (observed.routes.get(prefix) ?? []).map((r) => r.nextHop);
    const [only, ...more] = held;
    if ((!rb && !only) || (only && more.length === 0 && sameNextHop(only, to))) return [];
    return [`${prefix} is ${held.map(renderNextHop).join('; ') || 'gone'}, ${renderNextHop(to)} written`];
  });
  if (wrong.length > 0)
    throw new VerifyError(`after ${rb ? 'putting back' : 'replacing'}, not as written: ${wrong.join('; ')}`);
  if (rb && replaced.size > 0 && migration) {
    const done = transition(migration, { kind: 'rolled-back' }, now);
    const records = [{ kind: 'record' as const, migration: done, what: 'the rollback, done' }];
    await execute(e, s, { records, steps: [] }, null);
  }
  if (rb) {
    // Null only with nothing on record, where the plan holds no action.
    const begun = migration && transition(migration, { kind: 'rollback-begun' }, now);
    const replaces = rb.actions.map((action) => ({ kind: 'replace' as const, action }));
    const steps = begun && replaces.length > 0 ? [{ kind: 'journal' as const, migration: begun }, ...replaces] : [];
    return { planned, actions, decision: { records: [], steps }, refusals: rb.refusals, acted: acting };
  }
  const mode = must(desired, 'the desired mode').mode;
  const found =
    e.restarts && needsTarget(planned, mode, heard(migration, answer, now).migration, p.restart.strategy)
      ? await e.restarts.strategy.find()
      : null;
  runner?.took(answer);
  const decision = decide({
    plan: planned,
    desired: mode,
    migration,
    restarts: e.journal.data.restarts,
    ovnkube: observed.ovnkube,
    target: found,
    settings: p.restart,
    now,
    wallOffsetMs: e.journal.wallOffset(),
    restartInFlight: runner?.inFlight ?? false,
    answer,
    journalLags: first && e.journal.lag !== null,
  });
  s.outcome = { plan: planned, decision, observed, suspensions, restart: decision.restart };
  return { planned, actions, decision, refusals: [], acted: acting };
}

/** What fights are tracked on: each service CIDR's one next hop, in the situation the loop acts in. */
function fightSeen(desired: DesiredMode, config: PlannerConfig, observed: Observation, now: number) {
  const hops = new Map<string, NextHop>();
  for (const c of config.serviceCidrs) {
    const [only, ...more] = observed.routes.get(c.text) ?? [];
    if (only && more.length === 0) hops.set(c.text, only.nextHop);
  }
  return {
    situation: { desiredMode: desired.mode, ovnkube: observed.ovnkube.id },
    observed: hops,
    now,
    hint: `is ovnkube-node really running ${desired.mode} gateway mode on a 4.8/4.9 build?`,
  };
}

// ---- `plan`, `apply`, `rollback`: one pass

/** The migration replaced routes the given service CIDRs do not name: a bad flag (exit 2). */
export class RollbackCidrsError extends coded('ERR_GWMODE_ROLLBACK_CIDRS') {}

export interface OnceResult {
  /** A mode target's plan before acting, and after (the same when nothing was done); null for a rollback. */
  planned: Plan | null;
  final: Plan | null;
  actions: ReplaceAction[];
  applied: boolean;
  refusals: Reason[];
  /** The journaled migration whose restart the agent would still see to, as the last round decided (not held, not proven done). */
  restartLeft: Migration | null;
}

/** The restart reasons of a restart still to be made (decide.ts); Settling: made. */
const TO_MAKE = new Set(['RestartAwaited', 'RestartFailed', 'RestartTimedOut', 'RestartRateLimited']);

/** One pass under --restart none, acting once when `act` (`apply`, `rollback --yes`). */
export async function once(
  deps: Omit<Engine, 'restarts' | 'writes' | 'recorder'> & { act: boolean },
  config: PlannerConfig,
  target: Target,
): Promise<OnceResult> {
  if ('rollback' in target) assertNamed(deps.journal.data.migration, config, target.rollback.cidrsFrom);
  const input = { config, target, rounds: deps.act ? 1 : 0, restart: NO_RESTART };
  const { first, last } = await runPass(deps, input, { fights: NO_FIGHTS });
  const { planned, actions, refusals, acted, decision } = first;
  // As the agent would see to it: to be made, or held by this command's own dry run only; not one to begin.
  const d = last.decision;
  const code = 'restart' in d ? d.restart.reason?.code : undefined;
  const m = 'migration' in d && !d.steps.some((step) => step.kind === 'journal') ? d.migration : null;
  const held = code === 'RestartHeld' && m && last.planned && restartHeld({ ...last.planned, dryRun: false }, m);
  const restartLeft = m && restartOwed(m) && (TO_MAKE.has(code ?? '') || held === null) ? m : null;
  return { planned, final: last.planned, actions, applied: acted && decision.steps.length > 0, refusals, restartLeft };
}

/** A migration route outside the given service CIDRs would read as "no route" while it is there. */
function assertNamed(migration: Migration | null, config: PlannerConfig, from: string): void {
  const named = new Set(config.serviceCidrs.map((c) => c.text));
  // A /0 is left to planRollback, which refuses it with its reason (no flag could name it).
  const unnamed = (migration?.routes ?? [])
    .map((r) => parseCidr(r.key.prefix))
    .filter((c) => c.length > 0 && !named.has(c.text))
    .map((c) => c.text);
  const why = `rollback: the journal's migration replaced ${unnamed.join(', ')}, which ${from} (${[...named].join(', ')}) does not name: give the service CIDRs it was made with`;
  if (unnamed.length > 0) throw new RollbackCidrsError(why);
}
