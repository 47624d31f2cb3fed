// The daemon's owner loop. One owner of the state; everything else only wakes it, and
// every decision is taken by pure functions (core/): the loop observes, asks them,
// and executes exactly the steps they return.
//
// A pass, in rounds: observe -> trackFights -> plan -> decide -> execute. A round that
// replaced routes is followed by another (the verification: the plan must then hold
// nothing for the routes just replaced, and the restart the migration owes is decided
// there; another service route changed by someone else meanwhile is planned and carried
// out there like in any round, and verified by the next; after the last round that may
// act, one more only verifies, and leaves what else it finds to the next pass, which it
// asks for). Wake-ups: mode-file changes, netlink events about what is watched, `lost`
// notifications, the periodic resync, the retry timer, and the decision's own wake-up
// (every second while the agent waits on ovnkube-node). Wake-ups during a pass set
// `dirty`, and one more pass runs after it: passes never overlap, and a burst of events
// costs one pass.
// The mode file is read by a pass that any wake-up but a netlink event asked for: a
// repair woken by the kernel does not wait on the file system, and a change of the
// file is a wake-up of its own (and the periodic resync re-reads it anyway). Likewise a
// pass woken by route events alone may reuse the last scan of /proc for ovnkube-node
// where it is provably current (src/ovnkube/proc.ts, OvnkubeScanner); any other wake-up
// scans in full.
//
// Races this handles:
//  1. A route changed by someone else between our observation and our replace: a
//     replace names the route's key and never creates, so it fails (ENOENT) instead
//     of adding a second route; the pass puts back what it changed and observes again.
//  2. The mode file half-written or garbled: the last valid mode is kept (none at
//     start, so nothing is ever applied before the first valid input). A file still
//     being written is not read as anything yet (mode/settled.ts): the pass goes on
//     with the mode it had, and the file is read again when it has settled.
//  3. Netlink notifications lost under load: `lost` forces a pass at once.
//  4. Something that keeps setting a route back: core/fights.ts suspends the repairs.
//  5. The agent killed mid-migration: the journal says which migration was under way
//     and which restart it owes; the next agent finishes it and restarts at most once.
//  7. A restart request the runtime is slow to answer: StopContainer waits out the
//     container's grace period (30 s), a hanging runtime its deadline on top. The
//     request is journaled in the pass, but its answer is not awaited there: the pass
//     ends, the loop stays live for systemd's watchdog and the liveness probe (a pass
//     longer than WatchdogSec is a stuck loop), and the answer, when it comes, wakes a
//     pass that records it (only into the request it answers: the record may have moved
//     on, a new ovnkube-node seen meanwhile). No second request while one is under way.
//  6. The journal unwritable (a full or read-only state directory). Before a change (the
//     start of a migration, a restart request) the change is refused. After one (the
//     outcome of a restart request, the new ovnkube-node seen, a migration taken off the
//     record after the kernel refused it) the change has happened: the state is kept in
//     memory, the loop goes on from it, the status says the journal lags behind, and the
//     save is retried (with backoff, and at the start of each pass) until it is written.
//  8. The echo of the agent's own writes: every route the kernel takes (a replace, a
//     put-back) comes back as a notification, which used to wake the next pass at once;
//     after a refused dual-stack replace (the IPv4 route moved and put back, the IPv6 one
//     refused) that pass failed the same way, hundreds of times a second, the IPv4
//     service route flapping each time. Each write the kernel took is expected back once
//     (by prefix: a notification does not say the next hop) and its echo is swallowed;
//     the expectations end when the next pass begins or notifications are lost (a late
//     echo then costs one pass, never a loop), and each lasts ECHO_WINDOW_MS at most: a
//     write the kernel took as a no-op (the route already was what the agent wrote, set so
//     by someone else since the observation) sends no notification, and an expectation
//     left waiting for it would hide the next real change of that prefix until something
//     else woke a pass. A failed pass thus waits out its backoff
//     unless something else changed: someone else's route change, a link or an address,
//     the mode file. The flap itself counts as a set-back (core/fights.ts, point 5).
//  9. Time: durations and deadlines on the monotonic clock, wall time only for what is
//     shown (src/clock.ts), and every timer's delay clamped (a deadline beyond 2^31-1 ms
//     fired after 1 ms). The journal keeps wall times on disk (journal-time.ts).
import type { Logger } from 'pino';
import { after, every, type Clock } from '../clock.js';
import { decide, needsTarget, summarize, backoffMs, type Decision, type RestartSettings, type Step } from '../core/decide.js';
import { recordApplied, suspensionsOf, trackFights, NO_FIGHTS, type FightState } from '../core/fights.js';
import { plan, watchedOf } from '../core/planner.js';
import { reason, type Reason } from '../core/reasons.js';
import { renderNextHop, type NextHop, type Watched } from '../core/route.js';
import type { DesiredMode, Observation, Phase, Plan, PlannerConfig } from '../core/types.js';
import type { Dataplane, DataplaneEvent, Subscription } from '../dataplane/types.js';
import type { ModePending, ModeRead, ModeWatch } from '../mode/source.js';
import { EMPTY_JOURNAL, type Journal, type JournalData } from '../restart/journal.js';
import { loadOffset, stableOffset, toMonotonic, toWall } from '../restart/journal-time.js';
import type { RestartStrategy } from '../restart/strategy.js';
import { shapeOf, type RestartStatus, type StatusReport } from '../status/report.js';
import { VERSION } from '../version.js';
import { applyReplaces, outcomeUnknown } from './execute.js';
import { errorCode, NO_RECORDER, type AgentRecorder } from './recorder.js';
import { observe, type OvnkubeProbe } from './observe.js';
import { VerifyError } from './reconcile.js';

export interface AgentDeps {
  dataplane: Dataplane;
  strategy: RestartStrategy;
  journal: Pick<Journal, 'load' | 'save' | 'setAside'>;
  probe: OvnkubeProbe;
  log: Logger;
  /** The mode file now, or "pending" while it is being written. */
  readMode: () => Promise<ModeRead | ModePending>;
  watchMode: (onChange: () => void) => ModeWatch;
  clock: Clock;
  /** This boot's id: the journal's monotonic times are trusted only within one boot (journal-time.ts); null: unknown. */
  bootId?: string | null;
  random: () => number;
  /** What the process lacks that the agent will need (a capability), found at start: shown as warnings. */
  missing?: string[];
  /** Told of each step carried out (metrics, the event history); none by default. */
  recorder?: AgentRecorder;
  /**
   * Called once per periodic resync, when the pass loop it woke or joined has ended
   * (the daemon trims malloc's arenas there, off the event loop). Never inside a pass;
   * a throw is logged, and the loop goes on.
   */
  atRest?: () => void;
  /**
   * A prompt signal of ovnkube-node's exit (src/ovnkube/exit-signal.ts), made with the
   * agent's wake-up; told after each pass which ovnkube-node it saw. None by default.
   */
  ovnkubeExit?: (wake: (why: string) => void) => { follow(pid: number | null): void; close(): void };
}

export interface AgentOptions {
  config: PlannerConfig;
  modePath: string;
  resyncIntervalMs: number;
  restart: RestartSettings;
}

const MAX_ROUNDS = 3;
/** How long the echo of an own write is waited for (race 8): the kernel sends it within the write's own round trip. */
export const ECHO_WINDOW_MS = 500;

type Acted = 'replaced' | 'restarted' | 'nothing';

interface Outcome {
  plan: Plan;
  decision: Decision;
  observed: Observation;
  suspensions: Map<string, string>;
}

export class Agent {
  private desired: DesiredMode;
  private outcome: Outcome | undefined;
  private journalData: JournalData = EMPTY_JOURNAL;
  private journalWarning: string | null = null;
  /** What was carried out but is not on disk yet (a save after the change failed); retried. */
  private journalLag: { what: string; attempts: number; error: string } | null = null;
  private fights: FightState = NO_FIGHTS;
  /** The prefixes the last round replaced: what its verification holds to account. */
  private justReplaced = new Set<string>();
  private error: Reason | null = null;
  /** Wall time of the end of the last pass: shown, never measured with. */
  private lastReconcile: number | null = null;
  /** Notifications expected back from the kernel for this pass's own writes, by prefix, each until a deadline (race 8). */
  private echoes = new Map<string, { count: number; until: number }>();
  private phase: Phase = 'Waiting';
  private reasons: Reason[] = [];
  /** The report of the last finished pass, which is what the agent tells. */
  private published: StatusReport | undefined;
  private running = false;
  private dirty = false;
  private stopped = false;
  private failures = 0;
  private ready = false;
  private lastProgress = 0;
  private resyncTimer: NodeJS.Timeout | undefined;
  /** A periodic resync woke a pass (or will): atRest is due when the loop has caught up. */
  private resyncDue = false;
  private retryTimer: NodeJS.Timeout | undefined;
  /** A failed pass's retry is set: it is the full pass a periodic resync would ask for. */
  private retryPending = false;
  private wakeTimer: NodeJS.Timeout | undefined;
  private kickTimer: NodeJS.Immediate | undefined;
  private modeTimer: NodeJS.Timeout | undefined;
  /** The next pass reads the mode file: every wake-up but a netlink event sets it. */
  private modeStale = true;
  /** The next pass scans /proc in full: every wake-up but a route event sets it. */
  private probeStale = true;
  private subscription: Subscription | undefined;
  private modeWatch: ModeWatch | undefined;
  private watched: Watched;
  private readonly listeners: Array<(s: StatusReport, changed: boolean) => void> = [];
  private idle: Promise<void> = Promise.resolve();
  private passes = 0;
  /** Inside once(), before its pass is counted. */
  private counting = false;
  private passWaiters: Array<() => void> = [];
  private readonly recorder: AgentRecorder;
  /** A restart request the runtime has not answered yet (race 7); stop() waits for it too. */
  private restartInFlight = false;
  private restarting: Promise<void> = Promise.resolve();
  /** The offset (wall minus monotonic) the journal on disk is noted with; kept while the wall clock has not stepped (journal-time.ts rule 4). */
  private notedOffset: number | null = null;
  private restartAnswer: { step: Extract<Step, { kind: 'restart' }>; err: unknown } | null = null;
  private readonly ovnkubeExit: ReturnType<NonNullable<AgentDeps['ovnkubeExit']>> | undefined;

  constructor(
    private readonly deps: AgentDeps,
    private options: AgentOptions,
  ) {
    this.desired = { mode: null, source: { path: options.modePath, error: 'not read yet' } };
    this.reasons = [reason('ModeNotRead', 'starting')];
    this.watched = watchedOf(options.config);
    this.recorder = deps.recorder ?? NO_RECORDER;
    // Not a netlink wake-up: the pass reads the mode file; and it scans /proc in full.
    this.ovnkubeExit = deps.ovnkubeExit?.((why) => this.kick(why));
  }

  /** Reads the journal; an unreadable one is set aside and reported, never fatal. */
  async init(): Promise<void> {
    try {
      const loaded = await this.deps.journal.load();
      const offset = loadOffset(loaded, this.deps.bootId ?? null, this.wallOffset());
      this.notedOffset = offset;
      this.journalData = toMonotonic(loaded, offset, this.deps.clock.now());
    } catch (err) {
      let where = 'left in place';
      try {
        where = `kept as ${await this.deps.journal.setAside(this.deps.clock.wall())}`;
      } catch (moveErr) {
        where = `could not be moved aside: ${(moveErr as Error).message}`;
      }
      this.journalWarning = `${(err as Error).message} (${where}); a migration it recorded will not be finished by this agent`;
      this.deps.log.error({ err }, this.journalWarning);
    }
  }

  start(): void {
    this.subscription = this.deps.dataplane.subscribe(this.watched, (e) => this.onEvent(e));
    this.modeWatch = this.deps.watchMode(() => this.kick('mode file changed'));
    this.resyncTimer = every(this.options.resyncIntervalMs, () => this.resync());
    this.kick('start');
  }

  /** New settings (SIGHUP): resolves after a full pass under them. */
  async reconfigure(options: AgentOptions, watchMode: AgentDeps['watchMode']): Promise<void> {
    this.options = options;
    this.watched = watchedOf(options.config);
    this.desired = { ...this.desired, source: { ...this.desired.source, path: options.modePath } };
    this.subscription?.close();
    this.subscription = this.deps.dataplane.subscribe(this.watched, (e) => this.onEvent(e));
    await this.modeWatch?.close();
    this.modeWatch = watchMode(() => this.kick('mode file changed'));
    clearInterval(this.resyncTimer);
    this.resyncTimer = every(options.resyncIntervalMs, () => this.resync());
    await this.settle();
  }

  /** Resolves after a pass that started after this call has ended. */
  settle(): Promise<void> {
    // A pass under way that has not yet counted itself started before this call.
    const target = this.passes + (this.counting ? 2 : 1);
    this.kick('settle');
    return new Promise((resolve) => {
      const check = () => (this.passes >= target || this.stopped ? resolve() : this.passWaiters.push(check));
      check();
    });
  }

  /** Stops waking up, waits for the pass under way and a restart request on its way (recording its answer), and releases everything. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.resyncTimer);
    clearTimeout(this.retryTimer);
    clearTimeout(this.wakeTimer);
    clearTimeout(this.modeTimer);
    if (this.kickTimer) clearImmediate(this.kickTimer);
    this.subscription?.close();
    this.ovnkubeExit?.close();
    await this.modeWatch?.close();
    await this.idle;
    // A request on its way (a signal about to be sent, a stop the runtime carries out) is not cut short.
    await this.restarting;
    // Its answer wakes no pass now: it is recorded here (a journal write, no kernel change),
    // so the next agent finds how the request went, not one still under way.
    await this.takeRestartAnswer();
  }

  /** What stop() still waits on: the pass under way, a restart request on its way, or nothing. */
  waitingOn(): 'pass' | 'restart' | null {
    if (this.running) return 'pass';
    return this.restartInFlight ? 'restart' : null;
  }

  /**
   * Asks for a pass; passes never overlap and wake-ups during one coalesce. Only a
   * netlink event passes readMode false, and only a route event routeEvent true: a
   * pass woken by route events alone may reuse the last /proc scan (observe.ts).
   */
  kick(why: string, readMode = true, routeEvent = false): void {
    if (this.stopped) return;
    if (readMode) this.modeStale = true;
    if (!routeEvent) this.probeStale = true;
    if (this.running) {
      this.dirty = true;
      return;
    }
    if (this.kickTimer) return;
    this.deps.log.debug({ why }, 'wake-up');
    this.kickTimer = setImmediate(() => {
      this.kickTimer = undefined;
      this.idle = this.pass();
    });
  }

  private onEvent(e: DataplaneEvent): void {
    // The dataplane delivers only what concerns this.watched (and any address).
    if (e.kind === 'lost') {
      // What was lost may be an echo or someone else's change: expect nothing, look at everything.
      this.echoes.clear();
      this.deps.log.warn({ err: e.error }, 'netlink notifications were lost: full resync');
      this.recorder.notificationsLost();
      this.kick('netlink notifications lost');
      return;
    }
    if (e.kind === 'unfiltered') {
      this.deps.log.warn(
        { err: e.error },
        'netlink: the kernel-side notification filter was not attached: changes of other routes take room in the receive buffer, and a burst of them can force a full resync',
      );
      return;
    }
    if (e.kind === 'route' && e.op === 'new') {
      const expected = this.echoes.get(e.prefix);
      if (expected !== undefined && this.deps.clock.now() > expected.until) this.echoes.delete(e.prefix);
      else if (expected !== undefined) {
        // Race 8: the kernel telling of the agent's own write, not a change to act on.
        if (expected.count === 1) this.echoes.delete(e.prefix);
        else this.echoes.set(e.prefix, { ...expected, count: expected.count - 1 });
        this.deps.log.debug({ prefix: e.prefix }, 'route notification of our own write: no wake-up');
        return;
      }
    }
    const what = e.kind === 'route' ? e.prefix : e.kind === 'link' ? e.link.name : e.address.address;
    this.kick(`${e.kind} ${e.op} ${what}`, false, e.kind === 'route');
  }

  private async readDesired(): Promise<void> {
    if (!this.modeStale) return;
    this.modeStale = false;
    const read = await this.deps.readMode();
    const path = this.options.modePath;
    if ('pending' in read) {
      // Being written: neither the new mode nor an error yet. Look again when it may have settled.
      this.deps.log.debug({ path, why: read.pending, retryInMs: read.retryInMs }, 'mode file not settled yet');
      clearTimeout(this.modeTimer);
      if (!this.stopped) this.modeTimer = after(read.retryInMs, () => this.kick('mode file settling'));
      return;
    }
    if (read.mode !== null) {
      if (read.mode !== this.desired.mode) {
        this.deps.log.info({ from: this.desired.mode, to: read.mode, path }, 'desired mode changed');
        this.recorder.desiredModeChanged(this.desired.mode, read.mode);
      }
      if ((read.detail ?? null) !== (this.desired.source.detail ?? null) && read.detail) this.deps.log.warn({ path, mode: read.mode, detail: read.detail }, 'desired mode read as the cluster network operator reads it');
      this.desired = { mode: read.mode, source: { path, error: null, detail: read.detail ?? null } };
      return;
    }
    if (read.error !== this.desired.source.error) {
      this.deps.log.error({ path, error: read.error, kept: this.desired.mode }, 'mode file invalid: keeping the last valid desired mode');
      this.recorder.modeFileError(path);
    }
    this.desired = { mode: this.desired.mode, source: { path, error: read.error, detail: this.desired.source.detail ?? null } };
  }

  private resync(): void {
    this.deps.log.debug('periodic resync');
    this.resyncDue = true;
    // A failed pass waits out its backoff (race 8): its retry is the full pass the resync
    // would be, and an earlier one would repeat the failure (and a flap) before its time.
    if (this.retryPending) return;
    this.kick('periodic resync');
  }

  private async pass(): Promise<void> {
    this.running = true;
    try {
      do {
        this.dirty = false;
        await this.once();
      } while (this.dirty && !this.stopped);
    } finally {
      this.running = false;
    }
    if (!this.resyncDue || this.stopped) return;
    this.resyncDue = false;
    try {
      this.deps.atRest?.();
    } catch (err) {
      this.deps.log.error({ err }, 'the at-rest hook failed');
    }
  }

  private async once(): Promise<void> {
    this.counting = true;
    this.lastProgress = this.deps.clock.now();
    const startedAt = this.lastProgress;
    // Race 8: an echo not seen by now comes late; this pass observes anyway.
    this.echoes.clear();
    let failedWith: string | null = null;
    let wakeInMs: number | undefined;
    const routeEventOnly = !this.probeStale;
    this.probeStale = false;
    try {
      await this.catchUpJournal();
      await this.readDesired();
      let acted: Acted = 'nothing';
      for (let round = 0; round < MAX_ROUNDS; round++) {
        acted = await this.round(acted === 'replaced', routeEventOnly);
        if (acted === 'nothing') break;
      }
      // No replace is left unverified: after a last round that replaced, one more that
      // only verifies (what else it finds is left to the next pass, which it asks for).
      if (acted === 'replaced') await this.round(true, routeEventOnly, true);
      wakeInMs = this.outcome?.decision.wakeInMs;
      this.failures = 0;
      this.error = null;
      // A retry still set (another wake-up came first) has nothing left to retry.
      clearTimeout(this.retryTimer);
      this.retryPending = false;
    } catch (err) {
      this.failures++;
      const e = err as Error & { code?: string };
      failedWith = errorCode(e);
      // A route that changed under a replace: look again at once, then back off.
      const delay = e.code === 'ENOENT' && this.failures === 1 ? 0 : backoffMs(this.failures, 1000, 60_000, this.deps.random());
      this.error =
        e.code === 'ERR_GWMODE_JOURNAL_WRITE'
          ? reason('JournalUnwritable', `refusing to change routes or restart ovnkube-node: the change cannot be journaled (attempt ${this.failures}, retrying in ${delay} ms): ${e.message}`)
          : reason('ReconcileFailed', `reconcile failed (attempt ${this.failures}, retrying in ${delay} ms): ${e.message}`);
      this.deps.log.error({ err: e, attempt: this.failures, retryInMs: delay }, 'reconcile failed');
      clearTimeout(this.retryTimer);
      this.retryPending = false;
      if (delay === 0) this.dirty = this.probeStale = true;
      else if (!this.stopped) {
        this.retryPending = true;
        this.retryTimer = after(delay, () => {
          this.retryPending = false;
          this.kick('retry');
        });
      }
    }
    if (this.error === null && this.journalLag !== null) {
      // The node is as the loop decided; only the record is behind.
      const lag = this.journalLag;
      const delay = backoffMs(lag.attempts, 1000, 60_000, this.deps.random());
      this.error = reason('JournalUnwritable', `the journal lags behind: ${lag.what} was carried out but could not be recorded (attempt ${lag.attempts}, retrying in ${delay} ms): ${lag.error}`);
      clearTimeout(this.retryTimer);
      if (!this.stopped) this.retryTimer = after(delay, () => this.kick('journal retry'));
    }
    this.ovnkubeExit?.follow(this.outcome?.observed.ovnkube.pid ?? null);
    clearTimeout(this.wakeTimer);
    if (wakeInMs !== undefined && !this.stopped) this.wakeTimer = after(wakeInMs, () => this.kick('decision wake-up'));
    this.lastReconcile = this.deps.clock.wall();
    this.lastProgress = this.deps.clock.now();
    this.recorder.reconciled(startedAt, this.lastProgress, failedWith);
    if (!this.ready) {
      this.ready = true;
      this.deps.log.info('first reconcile done');
    }
    this.publish();
    this.passes++;
    this.counting = false;
    for (const w of this.passWaiters.splice(0)) w();
  }

  /**
   * One round. After one that acted, another looks at the outcome: after replaces it
   * is the verification (nothing may be planned for the routes just replaced; other
   * routes set back meanwhile are repaired); after a restart request it reports how the
   * request went. verifyOnly: the round after the last that may act; it verifies and
   * decides (for the status) but carries out nothing, and asks for another pass if the
   * decision had steps or moved the migration on.
   */
  private async round(verifying: boolean, routeEventOnly: boolean, verifyOnly = false): Promise<Acted> {
    const { config, restart } = this.options;
    await this.takeRestartAnswer();
    const observed = await observe(this.deps.dataplane, this.watched, this.deps.probe, routeEventOnly);
    const now = this.deps.clock.now();
    const desired = this.desired;
    const hops = new Map<string, NextHop>();
    for (const c of config.serviceCidrs) {
      const routes = observed.routes.get(c.text) ?? [];
      if (routes.length === 1) hops.set(c.text, routes[0]!.nextHop);
    }
    this.fights = trackFights(this.fights, {
      inputs: `${desired.mode}|${observed.ovnkube.id}`,
      desiredMode: desired.mode,
      observed: hops,
      now,
      hint: `is ovnkube-node really running ${desired.mode} gateway mode on a 4.8/4.9 build?`,
    });
    const suspensions = suspensionsOf(this.fights);
    const planned = plan({ desired, config, observed, suspended: suspensions });
    if (verifying) {
      // Only the routes just replaced: another one set back by someone else since the
      // last observation is no failed replace, and this round repairs it.
      const unheld = planned.actions.filter((a) => this.justReplaced.has(a.key.prefix));
      if (unheld.length > 0) throw new VerifyError(`after replacing, still out of sync: ${unheld.map((a) => a.reason.message).join('; ')}`);
    }
    this.justReplaced = new Set();
    const migration = this.journalData.migration;
    const target = needsTarget(planned, desired.mode, migration, restart.strategy) ? await this.deps.strategy.find() : null;
    const decision = decide({
      plan: planned,
      desired: desired.mode,
      migration,
      restarts: this.journalData.restarts,
      ovnkube: observed.ovnkube,
      target,
      settings: restart,
      now,
      wallOffsetMs: this.wallOffset(),
      restartInFlight: this.restartInFlight,
    });
    this.outcome = { plan: planned, decision, observed, suspensions };
    if (verifyOnly) {
      if (decision.steps.length > 0 || decision.migration !== this.journalData.migration) this.dirty = true;
      return 'nothing';
    }
    await this.execute(decision.steps);
    if (decision.migration !== this.journalData.migration && !decision.steps.some((s) => s.kind === 'journal' || s.kind === 'restart')) {
      // A decision that only moved the migration on (the new ovnkube-node was seen).
      const wasDone = this.journalData.migration?.restart === 'done';
      await this.recordAfter({ ...this.journalData, migration: decision.migration }, 'the new ovnkube-node seen');
      if (decision.migration?.restart === 'done') this.deps.log.info({ mode: decision.migration.mode }, 'a new ovnkube-node runs the desired mode: watching the routes settle');
      if (decision.migration?.restart === 'done' && !wasDone) {
        this.recorder.restart({ strategy: this.deps.strategy.name, mode: decision.migration.mode, result: 'completed', target: null, code: null });
      }
    }
    if (decision.steps.some((s) => s.kind === 'replace')) return 'replaced';
    return decision.steps.some((s) => s.kind === 'restart') ? 'restarted' : 'nothing';
  }

  /**
   * Executes exactly the decided steps, in order. A decision is either a journal
   * entry followed by replaces (carried out together, all or none), or a restart.
   */
  private async execute(steps: Step[]): Promise<void> {
    if (steps.length === 0) return;
    this.deps.log.info({ steps: steps.map(describeStep) }, 'carrying out plan');
    const before = this.journalData;
    const replaces = steps.flatMap((s) => (s.kind === 'replace' ? [s.action] : []));
    const done: typeof replaces = [];
    for (const step of steps) {
      if (step.kind === 'journal') {
        await this.saveJournal({ ...this.journalData, migration: step.migration });
        this.deps.log.info({ mode: step.migration.mode }, 'migration journaled: replacing the routes');
      }
      if (step.kind === 'restart') await this.restart(step);
    }
    if (replaces.length === 0) return;
    try {
      const mode = this.desired.mode;
      await applyReplaces(this.ownWrites(), this.deps.log, replaces, (a, result, err) => {
        if (result === 'done') done.push(a);
        this.recorder.replace({ cidr: a.key.prefix, mode, before: renderNextHop(a.from), after: renderNextHop(a.to), result, code: err === null ? null : errorCode(err) });
      });
    } catch (err) {
      // What was replaced and then put back is a flap of that route: it counts as a
      // set-back when the next pass finds it put back (core/fights.ts, point 5).
      if (done.length > 0) {
        this.fights = recordApplied(this.fights, done, this.deps.clock.now(), `the agent put it back itself each time another replace of the same change failed (${(err as Error).message})`);
      }
      // Refused by the kernel: nothing was migrated (what had changed was put back),
      // so the migration is off the record. A replace whose answer was lost may have
      // happened: the record stays, and the next observation tells.
      if (this.journalData !== before && !outcomeUnknown(err)) {
        await this.recordAfter(before, 'taking the migration the kernel refused off the record', err);
      }
      throw err;
    }
    this.fights = recordApplied(this.fights, replaces, this.deps.clock.now());
    this.justReplaced = new Set(replaces.map((a) => a.key.prefix));
  }

  private async restart(step: Extract<Step, { kind: 'restart' }>): Promise<void> {
    if (this.restartInFlight) {
      this.deps.log.warn({ target: step.target.describe }, 'a restart request is still under way: not requesting another');
      return;
    }
    const now = this.deps.clock.now();
    // Journaled (synced) before it is requested: a restart is never requested twice.
    await this.saveJournal({ ...this.journalData, migration: step.migration, restarts: [...this.journalData.restarts, now] });
    this.deps.log.info({ strategy: this.deps.strategy.name, target: step.target.describe, mode: step.migration.mode }, `restarting ovnkube-node: ${step.target.describe}`);
    // Not awaited (race 7): the answer wakes a pass that records it.
    this.restartInFlight = true;
    const answered = (err: unknown) => {
      this.restartInFlight = false;
      this.restartAnswer = { step, err };
      this.kick('restart request answered');
    };
    this.restarting = this.deps.strategy.restart(step.target).then(
      () => answered(null),
      (err: unknown) => answered(err ?? new Error('the restart request failed')),
    );
  }

  /** Records how the last restart request went, into that request's migration only. */
  private async takeRestartAnswer(): Promise<void> {
    const answer = this.restartAnswer;
    if (answer === null) return;
    this.restartAnswer = null;
    const { step, err } = answer;
    const m = this.journalData.migration;
    const same = m !== null && m.mode === step.migration.mode && m.startedAt === step.migration.startedAt && m.attempts === step.migration.attempts;
    const base = { strategy: this.deps.strategy.name, mode: step.migration.mode, target: step.target.describe };
    if (err !== null) {
      this.deps.log.error({ err, target: step.target.describe }, 'restart of ovnkube-node failed');
      this.recorder.restart({ ...base, result: 'failed', code: errorCode(err) });
      // A new ovnkube-node already seen (done) makes the failure moot: the restart happened.
      if (same && m.restart === 'requested') {
        await this.recordAfter({ ...this.journalData, migration: { ...m, restart: 'failed', outcome: 'failed', lastError: (err as Error).message } }, 'a failed restart request');
      }
      return;
    }
    if (same) await this.recordAfter({ ...this.journalData, migration: { ...m, outcome: 'stopped' } }, 'the restart request');
    this.recorder.restart({ ...base, result: 'stopped', code: null });
  }

  /** Before a change: written, or the change is not made (the error propagates). */
  private async saveJournal(data: JournalData): Promise<void> {
    await this.deps.journal.save(this.onDisk(data));
    this.journalData = data;
    this.caughtUp();
  }

  /**
   * After a change: the state is taken in memory whatever the disk says, and a save
   * that fails is retried later (journalLag) instead of failing the pass. `cause` is
   * the error that led to the change (a kernel refusal), logged beside the journal's.
   */
  private async recordAfter(data: JournalData, what: string, cause?: unknown): Promise<void> {
    this.journalData = data;
    try {
      await this.deps.journal.save(this.onDisk(data));
      this.caughtUp();
    } catch (err) {
      const attempts = (this.journalLag?.attempts ?? 0) + 1;
      this.journalLag = { what, attempts, error: (err as Error).message };
      this.deps.log.error({ err, ...(cause !== undefined ? { kernelError: (cause as Error).message } : {}), attempt: attempts }, `the journal lags behind: ${what} was carried out but could not be recorded; keeping it in memory and retrying`);
    }
  }

  /** A pass first writes what the journal lags behind, if anything. */
  private async catchUpJournal(): Promise<void> {
    const lag = this.journalLag;
    if (lag === null) return;
    try {
      await this.deps.journal.save(this.onDisk(this.journalData));
      this.caughtUp();
    } catch (err) {
      this.journalLag = { ...lag, attempts: lag.attempts + 1, error: (err as Error).message };
      this.deps.log.error({ err, attempt: lag.attempts + 1 }, `the journal still lags behind: ${lag.what} is not recorded yet`);
    }
  }

  /**
   * The dataplane's replace, each write's echo expected (race 8). Expected before the
   * request goes out: the notification may be read before the kernel's answer. A write
   * that failed expects nothing (refused: none comes; answer lost: one that comes costs
   * a pass, while one expected in vain would hide someone else's change).
   */
  private ownWrites(): Pick<Dataplane, 'replaceRoute'> {
    // Until the kernel has answered, the echo may come at any moment (a slow answer must not
    // turn the write's own echo into a wake-up); the window starts with the answer, after which
    // the notification, sent before it, is only waiting to be read.
    const expect = (prefix: string, n: number, until: number) => {
      const left = (this.echoes.get(prefix)?.count ?? 0) + n;
      if (left > 0) this.echoes.set(prefix, { count: left, until });
      else this.echoes.delete(prefix);
    };
    return {
      replaceRoute: async (r) => {
        expect(r.key.prefix, 1, Infinity);
        try {
          await this.deps.dataplane.replaceRoute(r);
        } catch (err) {
          expect(r.key.prefix, -1, this.deps.clock.now() + ECHO_WINDOW_MS);
          throw err;
        }
        const echo = this.echoes.get(r.key.prefix);
        if (echo !== undefined) this.echoes.set(r.key.prefix, { ...echo, until: this.deps.clock.now() + ECHO_WINDOW_MS });
      },
    };
  }

  /** Wall minus monotonic time now: how a monotonic time is shown (and written to disk). */
  private wallOffset(): number {
    return this.deps.clock.wall() - this.deps.clock.now();
  }

  /** The journal as the disk keeps it: wall times, with how to read them back (journal-time.ts). */
  private onDisk(data: JournalData): JournalData {
    this.notedOffset = stableOffset(this.notedOffset, this.wallOffset());
    return toWall(data, this.notedOffset, this.deps.bootId ?? null);
  }

  private caughtUp(): void {
    if (this.journalLag === null) return;
    this.deps.log.info({ what: this.journalLag.what, attempts: this.journalLag.attempts }, 'the journal caught up');
    this.journalLag = null;
  }

  private publish(): void {
    const o = this.outcome;
    const summary = o
      ? summarize(o.plan, this.error ? { phase: null, reason: null } : o.decision.restart, o.suspensions, this.error)
      : { phase: this.error ? ('Degraded' as const) : ('Waiting' as const), reasons: this.error ? [this.error] : this.reasons };
    const changed = summary.phase !== this.phase || summary.reasons.map((r) => r.message).join('\n') !== this.reasons.map((r) => r.message).join('\n');
    if (changed) {
      const level = summary.phase === 'Degraded' ? 'warn' : 'info';
      this.deps.log[level]({ from: this.phase, to: summary.phase, reasons: summary.reasons.map((r) => r.message), codes: summary.reasons.map((r) => r.code) }, `phase ${summary.phase}`);
    }
    this.phase = summary.phase;
    this.reasons = summary.reasons;
    this.published = this.report();
    const s = this.published;
    for (const l of this.listeners) l(s, changed);
  }

  /** Called after each pass; `changed` when the phase or its reasons changed. */
  onStatus(listener: (s: StatusReport, changed: boolean) => void): void {
    this.listeners.push(listener);
  }

  isReady(): boolean {
    return this.ready;
  }

  /** Monotonic time (Clock.now) of the last time the loop started or ended a pass. */
  lastProgressAt(): number {
    return this.lastProgress;
  }

  isBusy(): boolean {
    return this.running;
  }

  private restartStatus(): RestartStatus {
    const m = this.journalData.migration;
    const owed = m !== null && m.mode === this.desired.mode && (m.restart === 'owed' || m.restart === 'requested' || m.restart === 'failed');
    const offset = this.wallOffset();
    const iso = (t: number) => new Date(t + offset).toISOString();
    return {
      strategy: this.deps.strategy.name,
      required: owed,
      migration: m && { mode: m.mode, startedAt: iso(m.startedAt), restart: m.restart, attempts: m.attempts },
      last: m && m.lastAttemptAt !== null ? { at: iso(m.lastAttemptAt), target: m.stoppedAs ?? m.stopped ?? '', result: m.outcome ?? 'requested', error: m.lastError } : null,
      count: this.journalData.restarts.length,
    };
  }

  /**
   * The status as of the last finished pass. A pass changes the plan, the desired mode and
   * the observation as it goes and the phase only at its end: a report read in between
   * would say Converged beside a route out of sync.
   */
  status(): StatusReport {
    return this.published ?? this.report();
  }

  private report(): StatusReport {
    const p = this.outcome?.plan;
    const suspensions = this.outcome?.suspensions ?? new Map<string, string>();
    const warnings = [...(p?.warnings ?? []), ...(this.journalWarning ? [this.journalWarning] : []), ...(this.deps.missing ?? [])];
    return {
      desiredMode: this.desired.mode,
      modeSource: { path: this.desired.source.path, error: this.desired.source.error, detail: this.desired.source.detail ?? null },
      ovnkubeMode: this.outcome?.observed.ovnkube.mode ?? null,
      layout: p?.layout ?? 'unknown',
      platform: p?.platform ?? { release: 'unknown', evidence: 'not looked at yet' },
      phase: this.phase,
      reasons: this.reasons.map((r) => r.message),
      reasonCodes: this.reasons.map((r) => r.code),
      routes: (p?.routes ?? this.options.config.serviceCidrs.map((c) => ({ cidr: c.text, family: c.family, observed: null, multipath: false, expected: null, inSync: false }))).map(
        (r) => ({
          cidr: r.cidr,
          family: r.family,
          observed: r.observed && shapeOf(r.observed),
          ...(r.multipath ? { multipath: true as const } : {}),
          expected: r.expected && shapeOf(r.expected),
          inSync: r.inSync,
          repairsSuspended: suspensions.get(r.cidr) ?? null,
        }),
      ),
      restart: this.restartStatus(),
      dryRun: this.options.config.dryRun,
      lastReconcile: this.lastReconcile === null ? null : new Date(this.lastReconcile).toISOString(),
      lastError: this.error?.message ?? null,
      warnings,
      version: VERSION,
    };
  }
}

function describeStep(s: Step): string {
  switch (s.kind) {
    case 'journal':
      return `journal the migration to ${s.migration.mode} (restart owed)`;
    case 'replace':
      return `replace ${s.action.key.prefix}: ${renderNextHop(s.action.from)} -> ${renderNextHop(s.action.to)} (${s.action.reason.message})`;
    case 'restart':
      return `restart ovnkube-node ${s.target.describe}`;
  }
}
