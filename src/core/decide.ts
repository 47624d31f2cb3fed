// The one decision point: the plan, the migration on record and what the restart strategy sees in;
// this round's records, steps and phase out. The rules (docs/design.md's table cites their numbers):
//  1. Replaces towards another mode than the recorded migration's, or of routes rolled back (or under
//     way when the node reached the other mode), start a migration, journaled with its restart owed
//     first; it carries the routes a rollback under way had not put back yet.
//  2. Before that first replace the strategy must find exactly one ovnkube-node (else RestartPathBroken).
//  3. The restart is done when a new ovnkube-node (neither the one the migration began with nor the
//     one stopped) runs the migration's mode, whoever restarted it; never Converged before.
//  4. A failed restart is retried with capped backoff within the rate limit; a verification timeout
//     is Degraded and recovers by itself when the new ovnkube-node shows up.
//  5. After the restart the routes must hold for the settle time before Converged.
//  6. While the agent waits on ovnkube-node it looks again every second.
//  7. Never a restart request while one is under way: its answer wakes the next pass.
//  8. The target is exactly the ovnkube-node the decision saw, or nothing: one kubelet restarted in
//     between (liveness, OOM) is never stopped (three starts for one migration); look again.
//  9. Times are monotonic ms (src/clock.ts); wallOffsetMs turns one into wall time for a message.
// 10. An owed restart is requested only under the plan that would start a migration (legacy, not a
//     dry run, local); else RestartHeld: shared is ovnkube-node's, and on 4.10+ a restart repairs nothing.
// 11. An ovnkube-node seen running another mode is never stopped (it would come back in that mode)
//     nor taken for the proof, whatever --ovnkube-mode-check says.
import { restartOwed, rollingBack, transition } from './migration.js';
import type { IdentityKind, Migration, RestartTarget } from './migration.js';
import { must } from './must.js';
import { modeUnseen } from './planner.js';
import { reason, type Reason, type ReasonCode } from './reasons.js';
import type { GatewayMode, Phase, Plan } from './types.js';
import { HOUR_MS, POLL_MS, QUICK_FOR_MS, QUICK_POLL_MS } from './decision.js';
import type {
  DecideInput,
  Decision,
  RateLimit,
  RecordStep,
  RestartAnswer,
  RestartSettings,
  RestartView,
  Step,
} from './decision.js';

export * from './decision.js';

type Core = Omit<Decision, 'records' | 'dryRun' | 'waiting'>;

/** Capped, jittered exponential backoff: attempt 1 waits about base, doubling to max. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random = 1): number {
  const capped = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(capped * (0.5 + random / 2));
}

type Allowance = { allowed: true } | { allowed: false; nextAllowedAt: number; reason: string };
/** The rate limit: whether a restart may be requested now, given the times of earlier ones. */
export function restartAllowed(history: number[], now: number, limit: RateLimit): Allowance {
  const last = Math.max(-Infinity, ...history);
  if (now - last < limit.minIntervalMs) {
    const why = `the last restart was less than ${Math.round(limit.minIntervalMs / 1000)}s ago`;
    return { allowed: false, nextAllowedAt: last + limit.minIntervalMs, reason: why };
  }
  const lastHour = history.filter((t) => now - t < HOUR_MS);
  if (lastHour.length < limit.maxPerHour) return { allowed: true };
  const why = `${lastHour.length} restarts in the last hour (at most ${limit.maxPerHour})`;
  return { allowed: false, nextAllowedAt: Math.min(...lastHour) + HOUR_MS, reason: why };
}

/** Rule 1. */
const startsMigration = (plan: Plan, desired: GatewayMode | null, m: Migration | null): boolean =>
  plan.actions.length > 0 &&
  desired !== null &&
  (m?.mode !== desired || (m.rollback !== null && (!rollingBack(m) || m.restart === 'none')));

/** Whether the shell must ask the restart strategy before deciding (a CRI call costs). */
export function needsTarget(
  plan: Plan,
  desired: GatewayMode | null,
  m: Migration | null,
  strategy: RestartSettings['strategy'],
): boolean {
  if (strategy === 'none') return false;
  if (startsMigration(plan, desired, m)) return true;
  return m !== null && m.mode === desired && restartOwed(m) && restartHeld(plan, m) === null;
}

/** Rule 10: why the restart owed by the migration on record (in the desired mode) may not be requested, or null. */
export function restartHeld(plan: Plan, m: Migration): string | null {
  if (m.mode !== 'local') return "shared mode is ovnkube-node's: the agent restarts nothing for it";
  if (plan.dryRun) return 'dry run';
  if (plan.layout === 'routing-via-host')
    return `the node has the routing-via-host layout (${plan.platform.evidence}): a restart there repairs nothing`;
  if (plan.layout !== 'legacy') return `the OpenShift release is unknown (${plan.platform.evidence})`;
  return null;
}

const identityKind = (strategy: RestartSettings['strategy']): IdentityKind =>
  strategy === 'cri' ? 'container' : 'process';

/**
 * Rules 2 and 8: the ovnkube-node to restart, or why not now. Under --restart signal: `moved`, the
 * process found is not the one observed (under CRI the container found is the identity itself);
 * `uncompared`, no one ovnkube-node observed (not "moved": a quick look again finds the same).
 */
type Found = { target: RestartTarget } | { broken: string } | { uncompared: string } | { moved: string };
function targetOf(i: DecideInput): Found {
  const t = i.target;
  if (!t || 'error' in t) return { broken: t ? t.error : 'the restart strategy was not asked' };
  if (i.settings.strategy !== 'signal') return t;
  const found = t.target.describe;
  if (i.ovnkube.id === null) {
    const why = `the ovnkube-node observed has no identity to hold the restart target (${found}) to (${i.ovnkube.detail ?? 'not one process'}): nothing is stopped`;
    return { uncompared: why };
  }
  const moved = `ovnkube-node changed while it was looked at (observed ${i.ovnkube.id}, then found ${found}): looking again before anything is stopped`;
  return t.target.id === i.ovnkube.id ? t : { moved };
}

const isoAt = (i: DecideInput, t: number): string => new Date(t + (i.wallOffsetMs ?? 0)).toISOString();

/** A round that only reports: the migration as given, the phase and reason (none: code null), when to look again. */
function report(
  migration: Migration | null,
  phase: Phase | null,
  code: ReasonCode | null,
  message: string,
  wakeInMs: number | undefined,
  error?: string,
  steps: Step[] = [],
): Core {
  const restart = { phase, reason: code && reason(code, message), ...(error ? { error } : {}) };
  return { steps, migration, restart, wakeInMs };
}

/** The most common report: Progressing, waiting on a restart. */
const awaited = (m: Migration | null, why: string, wakeInMs: number | undefined, steps: Step[] = []): Core =>
  report(m, 'Progressing', 'RestartAwaited', why, wakeInMs, undefined, steps);

const quiet = (migration: Migration | null, wakeInMs: number | undefined): Core =>
  report(migration, null, null, '', wakeInMs);

/** A restart request's answer, put on record by the pass it wakes; one for a migration since superseded is only told. */
export function heard(m: Migration | null, answer: RestartAnswer | null | undefined, now: number) {
  if (!answer) return { migration: m, records: [] };
  const { step, error } = answer;
  const s = step.migration;
  const told: RecordStep = {
    kind: 'answered',
    mode: s.mode,
    target: step.target.describe,
    code: error?.code ?? null,
    error: error?.message ?? null,
    result: error ? 'failed' : 'stopped',
  };
  const same = m !== null && m.mode === s.mode && m.startedAt === s.startedAt && m.attempts === s.attempts;
  const after = same ? transition(m, { kind: 'answered', error: error?.message ?? null }, now) : m;
  if (after === m) return { migration: m, records: [told] };
  const what = `${error ? 'a failed' : 'the'} restart request`;
  const record: RecordStep = { kind: 'record', migration: after, what };
  return { migration: after, records: error ? [told, record] : [record, told] };
}

export function decide(i: DecideInput): Decision {
  // On record first: the journal's catch-up, then the restart's answer.
  const answer = heard(i.migration, i.answer, i.now);
  const before = answer.migration;
  const core = decideSteps({ ...i, migration: before });
  const records: RecordStep[] = [...(i.journalLags ? [{ kind: 'catch-up' } as const] : []), ...answer.records];
  const after = core.migration;
  // A decision that only moved the migration on: a journal or restart step records it itself.
  if (after !== before && !core.steps.some((s) => s.kind === 'journal' || s.kind === 'restart')) {
    records.push({ kind: 'record', migration: after, what: 'the new ovnkube-node seen' });
    if (after?.restart === 'done' && before?.restart !== 'done') records.push({ kind: 'completed', mode: after.mode });
  }
  return { ...core, records, dryRun: i.plan.dryRun, waiting: i.plan.awaitsOvnkube };
}

function decideSteps(i: DecideInput): Core {
  const { plan, desired, now } = i;
  const m = i.migration;
  const idle = plan.awaitsOvnkube ? POLL_MS : undefined;

  if (plan.actions.length > 0 && !plan.blocked && !plan.dryRun) {
    const replaces = plan.actions.map((action) => ({ kind: 'replace' as const, action }));
    // A repair within the migration on record: it owes no new restart.
    if (!startsMigration(plan, desired, m))
      return { steps: replaces, migration: m, restart: restartView(i).restart, wakeInMs: undefined };
    let before = i.ovnkube.id;
    if (i.settings.strategy !== 'none') {
      const t = targetOf(i);
      const not = `not starting the migration to ${desired}`;
      if ('broken' in t) {
        const why = `${not}: ovnkube-node could not be restarted afterwards: ${t.broken}`;
        return report(m, 'Waiting', 'RestartPathBroken', why, 10 * POLL_MS, t.broken);
      }
      if ('uncompared' in t)
        return report(m, 'Waiting', 'RestartPathBroken', `${not}: ${t.uncompared}`, POLL_MS, t.uncompared);
      // Rule 8: a migration is begun only with the ovnkube-node that will be restarted.
      if ('moved' in t) return awaited(m, t.moved, QUICK_POLL_MS);
      if (i.settings.strategy === 'cri') before = t.target.id;
    }
    const routes = plan.actions.map((a) => ({ key: a.key, from: a.from, to: a.to }));
    if (rollingBack(m) && m?.mode === desired)
      routes.push(...m.routes.filter((r) => !routes.some((a) => a.key.prefix === r.key.prefix)));
    const begun = { mode: must(desired, 'desired mode'), routes, identity: identityKind(i.settings.strategy) };
    const migration = transition(null, { kind: 'begun', ...begun, ovnkube: before }, now);
    const why = `migrating to ${desired}: ovnkube-node will be restarted`;
    return awaited(migration, why, undefined, [{ kind: 'journal', migration }, ...replaces]);
  }
  if (m && desired !== null && m.mode !== desired && inDesiredShape(plan)) {
    // Reached without the agent (a new ovnkube-node flushed the old routes): a return to m.mode owes its restart again.
    const identity = identityKind(i.settings.strategy);
    return quiet(transition(m, { kind: 'reached', mode: desired, identity }, now), idle);
  }
  if (!m || m.mode !== desired) return quiet(m, idle);
  const held = restartOwed(m) ? restartHeld(plan, m) : null;
  if (held !== null) {
    const why = `the restart of ovnkube-node owed by the migration to ${m.mode} (begun ${isoAt(i, m.startedAt)}) is held: ${held}`;
    return report(m, plan.dryRun ? 'Waiting' : null, 'RestartHeld', why, idle);
  }
  const r = restartView(i);
  // While a restart is owed, look every second: someone else's restart is noticed at once.
  const owed = r.migration !== null && restartOwed(r.migration);
  return { ...r, wakeInMs: owed ? Math.min(POLL_MS, r.wakeInMs ?? POLL_MS) : (r.wakeInMs ?? idle) };
}

/** Every service route has the desired shape (in shared mode, ovnkube-node's own mp0 fallback too). */
const AT_REST = new Set(['InSync', 'AlreadyShared', 'OvnkubeFallbackRoute']);
const inDesiredShape = (plan: Plan): boolean =>
  !plan.blocked && plan.actions.length === 0 && plan.reasons.some((r) => AT_REST.has(r.code));

/** The restart owed by the migration on record (whose mode is the desired one). */
function restartView(i: DecideInput): Core {
  let m = must(i.migration, 'migration');
  const { now, settings: s } = i;
  if (m.restart === 'none' || (m.restart === 'done' && now >= m.doneAt + s.settleMs)) return quiet(m, undefined);
  if (m.restart === 'done') {
    const until = m.doneAt + s.settleMs;
    const why = `a new ovnkube-node runs ${m.mode}; watching the service routes until ${isoAt(i, until)}`;
    return report(m, 'Progressing', 'Settling', why, until - now);
  }
  const stoppedAs = m.last?.target.describe ?? 'ovnkube-node';
  const underWay = `a restart request is under way (${stoppedAs}): waiting for its answer before any other for the migration to ${m.mode}`;
  // Rule 11; --ovnkube-mode-check off takes one whose mode is not seen for one in the migration's.
  const otherMode = i.ovnkube.modes.find((x) => x !== m.mode) ?? null;
  const modeOk = otherMode === null && modeUnseen(i.ovnkube, s.modeChecked) === null;
  const stopped = m.last?.target.id ?? null;
  // A migration that identified ovnkube-node by its process (`apply`, --restart signal or none):
  // /proc is read whatever the strategy, so another process is the new ovnkube-node under CRI too.
  const id = i.ovnkube.id;
  const fresh = (x: string | null) => x !== null && x !== m.ovnkubeBefore && x !== stopped;
  const processMoved = s.strategy === 'cri' && m.identity === 'process' && fresh(id);
  // The ovnkube-node now running: the container for CRI, else the process.
  const container = i.target && 'target' in i.target ? i.target.target.id : null;
  const current = s.strategy === 'cri' ? container : id;
  // --restart changed between agent runs (migration.ts, recounted): never call the restart done on that comparison.
  if (!processMoved && m.identity !== identityKind(s.strategy))
    m = transition(m, { kind: 'recounted', identity: identityKind(s.strategy), ovnkube: current }, now);
  const successor = processMoved ? id : fresh(current) ? current : null;
  if (successor !== null && modeOk) {
    const why = `a new ovnkube-node runs ${m.mode}; watching the service routes for ${Math.round(s.settleMs / 1000)}s`;
    return report(transition(m, { kind: 'restarted' }, now), 'Progressing', 'Settling', why, s.settleMs);
  }
  // Not the proof, and never the one to stop (a second restart for one migration).
  const rollout = `a new ovnkube-node (${successor}) runs ${otherMode ?? 'an unknown mode'}, not ${m.mode}: waiting for the operator's rollout`;
  if (successor !== null) return awaited(m, rollout, POLL_MS);
  const seen = current === null ? 'no ovnkube-node running' : `still ${current}`;
  const byHand = `waiting for ovnkube-node to be restarted for the migration to ${m.mode} (--restart none: restart it by hand); ${seen}`;
  if (s.strategy === 'none') return awaited(m, byHand, POLL_MS);
  if (otherMode !== null) {
    // Rule 11, a request that never took included: it would come back in the mode the operator renders.
    const who =
      i.ovnkube.mode !== null ? `ovnkube-node (pid ${i.ovnkube.pid})` : `an ovnkube-node (${i.ovnkube.detail})`;
    const why = `${who} runs --gateway-mode ${otherMode}, not ${m.mode}: the restart owed by the migration to ${m.mode} waits for the cluster network operator's rollout`;
    return report(m, null, 'RestartHeld', why, POLL_MS);
  }
  if (m.restart === 'requested') {
    if (now < m.last.at + s.timeoutMs) {
      const quick = now - m.last.at < QUICK_FOR_MS;
      const why = `restarted ovnkube-node (${stoppedAs}); waiting for a new one running ${m.mode}: ${seen}`;
      return awaited(m, why, quick ? QUICK_POLL_MS : POLL_MS);
    }
    if (i.restartInFlight) return awaited(m, underWay, POLL_MS);
    // The very one meant to be stopped still runs: the request never took (an agent killed between
    // journal and request). Asking again stops that same one.
    const t = i.target && 'target' in i.target && i.target.target.id === stopped ? i.target.target : null;
    if (t && current === stopped && restartAllowed(i.restarts, now, s.limit).allowed) {
      const again = transition(m, { kind: 'requested', target: t }, now);
      const why = `ovnkube-node ${stopped} still runs ${Math.round(s.timeoutMs / 1000)}s after its restart was requested: requesting it again`;
      const steps: Step[] = [{ kind: 'restart', target: t, migration: again }];
      return awaited(again, why, POLL_MS, steps);
    }
    const why = `ovnkube-node did not come back running ${m.mode} within ${Math.round(s.timeoutMs / 1000)}s of its restart (${stoppedAs}); ${seen}`;
    return report(m, 'Degraded', 'RestartTimedOut', why, POLL_MS);
  }
  // Owed, or failed before: request it, within backoff and the rate limit.
  if (i.restartInFlight) return awaited(m, underWay, POLL_MS);
  if (m.restart === 'failed') {
    const retryAt = m.last.at + backoffMs(m.attempts, s.retryBaseMs, s.retryMaxMs);
    const why = `restart of ovnkube-node for the migration to ${m.mode} failed (attempt ${m.attempts}): ${m.last.error}; retrying at ${isoAt(i, retryAt)}`;
    if (now < retryAt) return report(m, 'Degraded', 'RestartFailed', why, retryAt - now, m.last.error);
  }
  const allowed = restartAllowed(i.restarts, now, s.limit);
  if (!allowed.allowed) {
    // A planned wait with a known end (a deliberate back-and-forth spends the limit), not a failure.
    const why = `waiting until ${isoAt(i, allowed.nextAllowedAt)} to restart ovnkube-node for the migration to ${m.mode} (the restart rate limit: ${allowed.reason})`;
    return report(m, 'Progressing', 'RestartRateLimited', why, Math.max(POLL_MS, allowed.nextAllowedAt - now));
  }
  const t = targetOf(i);
  const what = `ovnkube-node for the migration to ${m.mode}`;
  if ('broken' in t) {
    const error = i.target ? t.broken : 'not looked up';
    return report(m, 'Degraded', 'RestartFailed', `cannot restart ${what}: ${error}`, 5 * POLL_MS, error);
  }
  if ('uncompared' in t) return awaited(m, `restart of ${what} waits: ${t.uncompared}`, POLL_MS);
  if ('moved' in t) return awaited(m, t.moved, QUICK_POLL_MS);
  const requested = transition(m, { kind: 'requested', target: t.target }, now);
  const why = `restarting ovnkube-node (${t.target.describe}) for the migration to ${m.mode}`;
  const steps: Step[] = [{ kind: 'restart', target: t.target, migration: requested }];
  return awaited(requested, why, QUICK_POLL_MS, steps);
}

/** reasons: the one that decides the phase first, the one `status --brief` shows. */
export type Summary = { phase: Phase; reasons: Reason[] };

/** The phase and its reasons, from the plan, the restart, the suspensions and a failure. */
export function summarize(
  plan: Plan,
  restart: RestartView,
  suspensions: ReadonlyMap<string, string>,
  error: Reason | null,
): Summary {
  const rest = (first: Reason[]) => [...first, ...plan.reasons.filter((r) => !first.includes(r))];
  const own = restart.reason ? [restart.reason] : [];
  if (error) return { phase: 'Degraded', reasons: rest([error, ...own]) };
  if (restart.phase === 'Degraded') return { phase: 'Degraded', reasons: rest(own) };
  if (suspensions.size > 0) {
    const held = plan.reasons.filter((r) => r.code === 'RepairsSuspended');
    const listed = held.length > 0 ? held : [...suspensions.values()].map((why) => reason('RepairsSuspended', why));
    return { phase: 'Degraded', reasons: rest([...listed, ...own]) };
  }
  // Waiting on the restart (its path broken, or held in a dry run): none of the plan's replaces is being made.
  if (restart.phase === 'Waiting')
    return { phase: 'Waiting', reasons: [...own, ...plan.reasons.filter((r) => r.code !== 'Replacing')] };
  if (restart.phase === 'Progressing') return { phase: 'Progressing', reasons: rest(own) };
  // A restart reason with no phase of its own (RestartHeld) is said after the plan's.
  const reasons = [...plan.reasons, ...own];
  if (plan.blocked) return { phase: 'Waiting', reasons };
  if (plan.actions.length > 0) return { phase: plan.dryRun ? 'Waiting' : 'Progressing', reasons };
  return { phase: 'Converged', reasons };
}
