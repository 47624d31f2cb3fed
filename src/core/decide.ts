// The one decision point. Given the plan, the migration on record and what the
// restart strategy sees, decide the records and steps of this round, and from the same
// inputs the phase with its reasons. The loop only carries them out, in order.
//
// A migration is the unit (the "keep every promise" rules):
//  1. A pass that replaces routes towards a mode other than the recorded migration's
//     starts a migration; it owes exactly one ovnkube-node restart. The migration is
//     journaled, restart owed, before the first replace.
//  2. Before the first replace of a migration the restart path is checked (the
//     strategy finds exactly one ovnkube-node): a migration that cannot finish is
//     not started (Waiting, RestartPathBroken).
//  3. The restart is done when a new ovnkube-node (another identity than the one the
//     migration started with, and than the one stopped) runs the migration's mode,
//     whoever restarted it. Until then the phase is never Converged.
//  4. A failed restart is retried with capped backoff, within the rate limit; a
//     verification timeout is Degraded and recovers by itself when the new
//     ovnkube-node shows up.
//  5. After the restart the routes must hold for the settle time before Converged.
//  6. While the agent waits on ovnkube-node (a rollout, a restart) it looks again
//     every second: a new ovnkube-node is noticed within about a second.
//  7. Never a restart request while one is under way (a mode change or the restart
//     timeout during a CRI stop): the phase says it is under way, and the pass ends
//     there (its answer wakes the next one).
//  8. The target is exactly the ovnkube-node the decision saw, or nothing. The restart
//     strategy looks for its target after the observation: when kubelet restarted
//     ovnkube-node in between (liveness, OOM) it finds the new one, which must never be
//     stopped (three starts for one migration). A target other than the one observed
//     means "look again" at once: the new ovnkube-node is then seen, and if it runs the
//     desired mode the restart is done. (Under CRI the container found is the observation.)
//  9. Times are monotonic ms (src/clock.ts); wallOffsetMs turns one into wall time for a message.
// 10. An owed restart is requested only under the plan that would start a migration: the
//     layout legacy (the release proven 4.8/4.9, or stated), not a dry run, and the migration
//     and the desired mode local. Otherwise it is held (RestartHeld, no step): an `apply`
//     then `run --dry-run`, a node that showed 4.10+ evidence since (a restart there is no
//     repair of anything), a release no longer known, or a journal of an older agent with a
//     shared migration owing one (shared is ovnkube-node's: the agent restarts nothing for it).
// 11. Whatever --ovnkube-mode-check says, an ovnkube-node seen running another mode than the
//     migration's is never stopped (it would come back in that mode) nor taken for the proof.
import type { IdentityKind, Migration, RestartTarget } from './migration.js';
import { reason, type Reason } from './reasons.js';
import type { GatewayMode, Phase, Plan } from './types.js';
import { restartAllowed } from './rate-limit.js';

export const POLL_MS = 1000;
/** Right after a restart request the successor usually comes within a moment: look closely for a while. */
export const QUICK_POLL_MS = 100;
const QUICK_FOR_MS = 2000;

import { heard } from './answer.js';
import type { DecideInput, Decision, RecordStep, RestartSettings, RestartView, Step } from './decision.js';
export type {
  DecideInput,
  Decision,
  RecordStep,
  RestartAnswer,
  RestartSettings,
  RestartStep,
  RestartView,
  Step,
} from './decision.js';
export { heard } from './answer.js';

/** What decideSteps works out; decide adds what follows from it. */
type Core = Omit<Decision, 'records' | 'dryRun' | 'waiting'>;
/** The decision's frame, set first from the plan: decideSteps reads these, not the plan's. */
type Frame = Pick<Decision, 'dryRun' | 'waiting'>;

/** Capped, jittered exponential backoff: attempt 1 waits about base, doubling to max. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random = 1): number {
  const capped = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(capped * (0.5 + random / 2));
}

const startsMigration = (plan: Plan, desired: GatewayMode | null, m: Migration | null): boolean =>
  plan.actions.length > 0 && desired !== null && m?.mode !== desired;

/** Whether the shell must ask the restart strategy before deciding (a CRI call costs). */
export function needsTarget(
  plan: Plan,
  desired: GatewayMode | null,
  m: Migration | null,
  strategy: RestartSettings['strategy'],
): boolean {
  if (strategy === 'none') return false;
  if (startsMigration(plan, desired, m)) return true;
  return m !== null && m.mode === desired && restartOwed(m) && restartHeld(plan, m, plan.dryRun) === null;
}

const restartOwed = (m: Migration): boolean => m.restart !== 'done' && m.restart !== 'none';

/** Rule 10: why the restart owed by the migration on record (whose mode is the desired one) may not be requested, or null. */
function restartHeld(plan: Plan, m: Migration, dryRun: boolean): string | null {
  if (m.mode !== 'local') return "shared mode is ovnkube-node's: the agent restarts nothing for it";
  if (dryRun) return 'dry run';
  if (plan.layout === 'routing-via-host')
    return `the node has the routing-via-host layout (${plan.platform.evidence}): a restart there repairs nothing`;
  if (plan.layout !== 'legacy') return `the OpenShift release is unknown (${plan.platform.evidence})`;
  return null;
}

const identityKind = (strategy: RestartSettings['strategy']): IdentityKind =>
  strategy === 'cri' ? 'container' : 'process';

/** The identity of the ovnkube-node now running: the container for CRI, else the process. */
function currentIdentity(i: DecideInput): string | null {
  if (i.settings.strategy === 'cri') return i.target && 'target' in i.target ? i.target.target.id : null;
  return i.ovnkube.id;
}

/**
 * Rule 8: the target found is not the ovnkube-node observed (a signal target is a
 * process; the observation's id is the same "pid N start T"). Under CRI the container
 * found is itself what is compared with the migration's identity: never a mismatch.
 */
function targetMoved(i: DecideInput, t: RestartTarget): boolean {
  return i.settings.strategy === 'signal' && i.ovnkube.id !== null && t.id !== i.ovnkube.id;
}

/**
 * Under --restart signal with no one ovnkube-node observed (processes that disagree, one
 * whose namespace cannot be read beside the one found): nothing to compare the target
 * with, so nothing is stopped. Not "moved": a quick look again would find the same, every
 * 100 ms for as long as it lasts; the usual one-second look waits for it to clear.
 */
const cannotCompare = (i: DecideInput): boolean => i.settings.strategy === 'signal' && i.ovnkube.id === null;

const noIdentity = (i: DecideInput, t: RestartTarget): string =>
  `the ovnkube-node observed has no identity to hold the restart target (${t.describe}) to (${i.ovnkube.detail ?? 'not one process'}): nothing is stopped`;

const lookAgain = (i: DecideInput, t: RestartTarget): Reason =>
  reason(
    'RestartAwaited',
    `ovnkube-node changed while it was looked at (observed ${i.ovnkube.id ?? 'none'}, then found ${t.describe}): looking again before anything is stopped`,
  );

const isoAt = (i: DecideInput, t: number): string => new Date(t + (i.wallOffsetMs ?? 0)).toISOString();

export function decide(i: DecideInput): Decision {
  const frame: Frame = { dryRun: i.plan.dryRun, waiting: i.plan.awaitsOvnkube };
  // What already happened goes on record first: the journal's catch-up, then the restart's answer.
  const answer = heard(i.migration, i.answer);
  const before = answer.migration;
  const core = decideSteps({ ...i, migration: before }, frame);
  const records: RecordStep[] = [...(i.journalLags ? [{ kind: 'catch-up' } as const] : []), ...answer.records];
  const after = core.migration;
  // A decision that only moved the migration on: a journal or restart step records it itself.
  if (after !== before && !core.steps.some((s) => s.kind === 'journal' || s.kind === 'restart')) {
    records.push({ kind: 'record', migration: after, what: 'the new ovnkube-node seen' });
    if (after?.restart === 'done' && before?.restart !== 'done') records.push({ kind: 'completed', mode: after.mode });
  }
  return { ...core, records, ...frame };
}

function decideSteps(i: DecideInput, frame: Frame): Core {
  const { plan, desired, now } = i;
  const m = i.migration;
  const waitingOnOvnkube = frame.waiting;
  const pollIf = (cond: boolean) => (cond ? POLL_MS : undefined);
  const none: RestartView = { phase: null, reason: null };

  if (plan.actions.length > 0 && !plan.blocked && !frame.dryRun) {
    const replaces: Step[] = plan.actions.map((action) => ({ kind: 'replace', action }));
    if (!startsMigration(plan, desired, m)) {
      // A repair within the migration on record: it owes no new restart.
      return { steps: replaces, migration: m, restart: restartView(i).restart, wakeInMs: undefined };
    }
    let before: string | null = i.ovnkube.id;
    if (i.settings.strategy !== 'none') {
      const t = i.target;
      if (!t || 'error' in t) {
        const why = t ? t.error : 'the restart strategy was not asked';
        return {
          steps: [],
          migration: m,
          restart: {
            phase: 'Waiting',
            reason: reason(
              'RestartPathBroken',
              `not starting the migration to ${desired}: ovnkube-node could not be restarted afterwards: ${why}`,
            ),
            error: why,
          },
          wakeInMs: 10 * POLL_MS,
        };
      }
      if (cannotCompare(i)) {
        return {
          steps: [],
          migration: m,
          restart: {
            phase: 'Waiting',
            reason: reason('RestartPathBroken', `not starting the migration to ${desired}: ${noIdentity(i, t.target)}`),
          },
          wakeInMs: POLL_MS,
        };
      }
      if (targetMoved(i, t.target)) {
        // Rule 8: the ovnkube-node to restart afterwards is not the one observed; a
        // migration is begun only with the one that will be restarted.
        return {
          steps: [],
          migration: m,
          restart: { phase: 'Progressing', reason: lookAgain(i, t.target) },
          wakeInMs: QUICK_POLL_MS,
        };
      }
      if (i.settings.strategy === 'cri') before = t.target.id;
    }
    const migration: Migration = {
      ...FRESH,
      mode: desired!,
      startedAt: now,
      identity: identityKind(i.settings.strategy),
      ovnkubeBefore: before,
      routes: plan.actions.map((a) => ({ key: a.key, from: a.from, to: a.to })),
      restart: 'owed',
    };
    return {
      steps: [{ kind: 'journal', migration }, ...replaces],
      migration,
      restart: {
        phase: 'Progressing',
        reason: reason('RestartAwaited', `migrating to ${desired}: ovnkube-node will be restarted`),
      },
      wakeInMs: undefined,
    };
  }
  if (m && desired !== null && m.mode !== desired && inDesiredShape(plan)) {
    // The node reached the desired mode without the agent (a new ovnkube-node flushed
    // the old routes): the record moves on, so that a return to m.mode is a new
    // migration that owes its restart again.
    const reached: Migration = { ...FRESH, mode: desired, startedAt: now, identity: identityKind(i.settings.strategy) };
    return { steps: [], migration: reached, restart: none, wakeInMs: pollIf(waitingOnOvnkube) };
  }
  if (!m || m.mode !== desired) return { steps: [], migration: m, restart: none, wakeInMs: pollIf(waitingOnOvnkube) };
  const held = restartOwed(m) ? restartHeld(plan, m, frame.dryRun) : null;
  if (held !== null) {
    // The record keeps the restart owed: a later pass under a plan that allows it requests it.
    const why = reason(
      'RestartHeld',
      `the restart of ovnkube-node owed by the migration to ${m.mode} (begun ${isoAt(i, m.startedAt)}) is held: ${held}`,
    );
    return {
      steps: [],
      migration: m,
      restart: { phase: frame.dryRun ? 'Waiting' : null, reason: why },
      wakeInMs: pollIf(waitingOnOvnkube),
    };
  }
  const r = restartView(i);
  // While a restart is owed, look every second: someone else's restart is noticed at once.
  const owed = r.migration !== null && r.migration.restart !== 'done' && r.migration.restart !== 'none';
  const wake = owed ? Math.min(POLL_MS, r.wakeInMs ?? POLL_MS) : (r.wakeInMs ?? pollIf(waitingOnOvnkube));
  return { ...r, wakeInMs: wake };
}

/**
 * Every service route already has the desired shape (nothing blocked, nothing to do); in
 * shared mode also a route ovnkube-node keeps via ovn-k8s-mp0 on purpose (the planner's
 * OvnkubeFallbackRoute): shared is ovnkube-node's, and a local migration on record owes it
 * no restart.
 */
const AT_REST = new Set(['InSync', 'AlreadyShared', 'OvnkubeFallbackRoute']);
const inDesiredShape = (plan: Plan): boolean =>
  !plan.blocked && plan.actions.length === 0 && plan.reasons.some((r) => AT_REST.has(r.code));

/** A migration record before anything happened to it; a node that got there by itself owes nothing. */
const FRESH: Omit<Migration, 'mode' | 'startedAt' | 'identity'> = {
  ovnkubeBefore: null,
  routes: [],
  restart: 'none',
  attempts: 0,
  lastAttemptAt: null,
  lastError: null,
  stopped: null,
  stoppedAs: null,
  outcome: null,
  doneAt: null,
};

/** The restart owed by the migration on record (whose mode is the desired one). */
function restartView(i: DecideInput): Core {
  let m = i.migration!;
  const { now, settings: s } = i;
  if (m.restart === 'none')
    return { steps: [], migration: m, restart: { phase: null, reason: null }, wakeInMs: undefined };
  const keep = (phase: Phase, r: Reason, wakeInMs: number | undefined, migration: Migration = m, error?: string) => ({
    steps: [] as Step[],
    migration,
    restart: { phase, reason: r, ...(error === undefined ? {} : { error }) },
    wakeInMs,
  });
  if (m.restart === 'done') {
    const until = (m.doneAt ?? now) + s.settleMs;
    if (now < until) {
      return keep(
        'Progressing',
        reason('Settling', `a new ovnkube-node runs ${m.mode}; watching the service routes until ${isoAt(i, until)}`),
        until - now,
      );
    }
    return { steps: [], migration: m, restart: { phase: null, reason: null }, wakeInMs: undefined };
  }
  const underWay = () =>
    keep(
      'Progressing',
      reason(
        'RestartAwaited',
        `a restart request is under way (${m.stoppedAs ?? m.stopped ?? 'ovnkube-node'}): waiting for its answer before any other for the migration to ${m.mode}`,
      ),
      POLL_MS,
    );
  const current = currentIdentity(i);
  // --ovnkube-mode-check off takes an ovnkube-node whose mode is not seen for one in the
  // migration's; one seen running the other mode is never the proof.
  const modeOk = i.ovnkube.mode === m.mode || (!s.modeChecked && i.ovnkube.mode === null);
  // A migration that identified ovnkube-node by its process (`apply`, or the agent
  // under --restart signal or none): /proc is read whatever the strategy, so another
  // process than the one the migration began with, and than the one stopped, is the
  // new ovnkube-node under CRI too. None running when it began (ovnkubeBefore null):
  // any one seen since started after it, as under --restart signal.
  const processMoved =
    m.identity === 'process' && i.ovnkube.id !== null && i.ovnkube.id !== m.ovnkubeBefore && i.ovnkube.id !== m.stopped;
  if (processMoved && s.strategy === 'cri') {
    if (!modeOk) {
      // As below: a new ovnkube-node in the other mode is neither the proof nor one to stop.
      return keep(
        'Progressing',
        reason(
          'RestartAwaited',
          `a new ovnkube-node (${i.ovnkube.id}) runs ${i.ovnkube.mode ?? 'an unknown mode'}, not ${m.mode}: waiting for the operator's rollout`,
        ),
        POLL_MS,
      );
    }
    const done: Migration = { ...m, restart: 'done', doneAt: now };
    return keep(
      'Progressing',
      reason(
        'Settling',
        `a new ovnkube-node runs ${m.mode}; watching the service routes for ${Math.round(s.settleMs / 1000)}s`,
      ),
      s.settleMs,
      done,
    );
  }
  if (m.identity !== identityKind(s.strategy)) {
    // --restart changed between agent runs (or `apply` recorded the migration): a
    // container id and a process identity cannot be compared. Count from what runs now;
    // never call the restart done on that comparison.
    m = { ...m, identity: identityKind(s.strategy), ovnkubeBefore: current, stopped: null, stoppedAs: null };
  }
  const isNew = current !== null && current !== m.ovnkubeBefore && current !== m.stopped;
  if (isNew && modeOk) {
    const done: Migration = { ...m, restart: 'done', doneAt: now };
    return keep(
      'Progressing',
      reason(
        'Settling',
        `a new ovnkube-node runs ${m.mode}; watching the service routes for ${Math.round(s.settleMs / 1000)}s`,
      ),
      s.settleMs,
      done,
    );
  }
  const seen =
    current === null ? 'no ovnkube-node running' : isNew ? `${current} not yet running ${m.mode}` : `still ${current}`;
  if (isNew) {
    // A new ovnkube-node in the other mode: it is not the proof, and it is never the
    // one to stop (that would be a second restart for one migration).
    return keep(
      'Progressing',
      reason(
        'RestartAwaited',
        `a new ovnkube-node (${current}) runs ${i.ovnkube.mode ?? 'an unknown mode'}, not ${m.mode}: waiting for the operator's rollout`,
      ),
      POLL_MS,
    );
  }
  if (s.strategy === 'none') {
    return keep(
      'Progressing',
      reason(
        'RestartAwaited',
        `waiting for ovnkube-node to be restarted for the migration to ${m.mode} (--restart none: restart it by hand); ${seen}`,
      ),
      POLL_MS,
    );
  }
  if (m.restart === 'requested') {
    const deadline = (m.lastAttemptAt ?? now) + s.timeoutMs;
    // The very instance the agent meant to stop still runs after the timeout: the
    // request never took (an agent killed between journal and request). Asking again
    // stops that same instance, never a new one; it waits for the rate limit.
    if (now >= deadline && i.restartInFlight) return underWay();
    if (
      now >= deadline &&
      current !== null &&
      current === m.stopped &&
      i.target &&
      'target' in i.target &&
      i.target.target.id === m.stopped
    ) {
      const allowed = restartAllowed(i.restarts, now, s.limit);
      if (allowed.allowed) {
        const again: Migration = { ...m, attempts: m.attempts + 1, lastAttemptAt: now, outcome: null };
        return {
          steps: [{ kind: 'restart', target: i.target.target, migration: again }],
          migration: again,
          restart: {
            phase: 'Progressing',
            reason: reason(
              'RestartAwaited',
              `ovnkube-node ${m.stopped} still runs ${Math.round(s.timeoutMs / 1000)}s after its restart was requested: requesting it again`,
            ),
          },
          wakeInMs: POLL_MS,
        };
      }
    }
    if (now >= deadline) {
      return keep(
        'Degraded',
        reason(
          'RestartTimedOut',
          `ovnkube-node did not come back running ${m.mode} within ${Math.round(s.timeoutMs / 1000)}s of its restart (${m.stoppedAs ?? m.stopped}); ${seen}`,
        ),
        POLL_MS,
      );
    }
    const quick = m.lastAttemptAt !== null && now - m.lastAttemptAt < QUICK_FOR_MS;
    return keep(
      'Progressing',
      reason(
        'RestartAwaited',
        `restarted ovnkube-node (${m.stoppedAs ?? m.stopped}); waiting for a new one running ${m.mode}: ${seen}`,
      ),
      quick ? QUICK_POLL_MS : POLL_MS,
    );
  }
  // Owed, or failed before: request it, within backoff and the rate limit.
  if (i.restartInFlight) return underWay();
  if (i.ovnkube.mode !== null && i.ovnkube.mode !== m.mode) {
    // Whatever --ovnkube-mode-check says: stopped, it would come back in the mode the operator
    // renders, not the migration's, and undo the migration at its start. Said after the plan's
    // OvnkubeOtherMode, like any held restart.
    const why = `ovnkube-node (pid ${i.ovnkube.pid}) runs --gateway-mode ${i.ovnkube.mode}, not ${m.mode}: the restart owed by the migration to ${m.mode} waits for the cluster network operator's rollout`;
    return { steps: [], migration: m, restart: { phase: null, reason: reason('RestartHeld', why) }, wakeInMs: POLL_MS };
  }
  if (m.restart === 'failed' && m.lastAttemptAt !== null) {
    const retryAt = m.lastAttemptAt + backoffMs(m.attempts, s.retryBaseMs, s.retryMaxMs);
    if (now < retryAt) {
      return keep(
        'Degraded',
        reason(
          'RestartFailed',
          `restart of ovnkube-node for the migration to ${m.mode} failed (attempt ${m.attempts}): ${m.lastError}; retrying at ${isoAt(i, retryAt)}`,
        ),
        retryAt - now,
        m,
        m.lastError ?? undefined,
      );
    }
  }
  const allowed = restartAllowed(i.restarts, now, s.limit);
  if (!allowed.allowed) {
    // A planned wait with a known end (a deliberate back-and-forth spends the limit), not a failure: Progressing.
    return keep(
      'Progressing',
      reason(
        'RestartRateLimited',
        `waiting until ${isoAt(i, allowed.nextAllowedAt)} to restart ovnkube-node for the migration to ${m.mode} (the restart rate limit: ${allowed.reason})`,
      ),
      Math.max(POLL_MS, allowed.nextAllowedAt - now),
    );
  }
  const t = i.target;
  if (!t || 'error' in t) {
    return keep(
      'Degraded',
      reason(
        'RestartFailed',
        `cannot restart ovnkube-node for the migration to ${m.mode}: ${t ? t.error : 'not looked up'}`,
      ),
      5 * POLL_MS,
      m,
      t ? t.error : 'not looked up',
    );
  }
  if (cannotCompare(i))
    return keep(
      'Progressing',
      reason(
        'RestartAwaited',
        `restart of ovnkube-node for the migration to ${m.mode} waits: ${noIdentity(i, t.target)}`,
      ),
      POLL_MS,
    );
  if (targetMoved(i, t.target)) return keep('Progressing', lookAgain(i, t.target), QUICK_POLL_MS);
  const requested: Migration = {
    ...m,
    restart: 'requested',
    attempts: m.attempts + 1,
    lastAttemptAt: now,
    stopped: t.target.id,
    stoppedAs: t.target.describe,
    outcome: null,
    lastError: null,
  };
  return {
    steps: [{ kind: 'restart', target: t.target, migration: requested }],
    migration: requested,
    restart: {
      phase: 'Progressing',
      reason: reason('RestartAwaited', `restarting ovnkube-node (${t.target.describe}) for the migration to ${m.mode}`),
    },
    wakeInMs: QUICK_POLL_MS,
  };
}

export interface Summary {
  phase: Phase;
  /** The reason that decides the phase comes first: it is the one `status --brief` shows. */
  reasons: Reason[];
}

/** The phase and its reasons, from the plan, the restart, the suspensions and a failure. */
export function summarize(
  plan: Plan,
  restart: RestartView,
  suspensions: ReadonlyMap<string, string>,
  error: Reason | null,
): Summary {
  const planReasons = plan.reasons;
  const rest = (first: Reason[]) => [...first, ...planReasons.filter((r) => !first.includes(r))];
  if (error) return { phase: 'Degraded', reasons: rest([error, ...(restart.reason ? [restart.reason] : [])]) };
  if (restart.phase === 'Degraded') return { phase: 'Degraded', reasons: rest([restart.reason!]) };
  if (suspensions.size > 0) {
    const held = planReasons.filter((r) => r.code === 'RepairsSuspended');
    const listed = held.length > 0 ? held : [...suspensions.values()].map((why) => reason('RepairsSuspended', why));
    return { phase: 'Degraded', reasons: rest([...listed, ...(restart.reason ? [restart.reason] : [])]) };
  }
  // Waiting on the restart (its path broken, or held in a dry run): none of the plan's replaces is being made.
  if (restart.phase === 'Waiting')
    return { phase: 'Waiting', reasons: [restart.reason!, ...planReasons.filter((r) => r.code !== 'Replacing')] };
  if (restart.phase === 'Progressing') return { phase: 'Progressing', reasons: rest([restart.reason!]) };
  // A restart reason with no phase of its own (RestartHeld) is said after the plan's.
  const reasons = restart.reason ? [...planReasons, restart.reason] : planReasons;
  if (plan.blocked) return { phase: 'Waiting', reasons };
  if (plan.actions.length > 0) return { phase: plan.dryRun ? 'Waiting' : 'Progressing', reasons };
  return { phase: 'Converged', reasons };
}
