// The daemon's owner loop: one owner of the state, everything else only wakes it, and
// every decision is taken by pure functions (core/). Its pipeline, its parts (scheduler.ts,
// inputs.ts, journal-keeper.ts, restart-runner.ts, steps.ts, status-board.ts) and the races
// it handles, each with its code and tests: docs/design.md.
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { decide, heard, needsTarget, type Decision, type RestartSettings } from '../core/decide.js';
import { recordApplied, suspensionsOf, trackFights, NO_FIGHTS, type FightState } from '../core/fights.js';
import { plan, watchedOf } from '../core/planner.js';
import { reason, type Reason } from '../core/reasons.js';
import { errorCode, NO_RECORDER, type AgentRecorder } from '../core/recorder.js';
import type { NextHop, Watched } from '../core/route.js';
import type { PlannerConfig } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';
import type { ModePending, ModeRead, ModeWatch } from '../mode/source.js';
import type { Journal } from '../restart/journal.js';
import type { RestartStrategy } from '../restart/strategy.js';
import { statusReport, summaryOf, type Outcome } from '../status/model.js';
import type { StatusReport } from '../status/report.js';
import { VerifyError } from './execute.js';
import { Inputs } from './inputs.js';
import { JournalKeeper } from './journal-keeper.js';
import { observe, type OvnkubeProbe } from './observe.js';
import { RestartRunner } from './restart-runner.js';
import { Scheduler, type PassEnd } from './scheduler.js';
import { StatusBoard, type BuildReport } from './status-board.js';
import { execute, type ExecuteParts } from './steps.js';

export { ECHO_WINDOW_MS } from './inputs.js';

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
}

export interface AgentOptions {
  config: PlannerConfig;
  modePath: string;
  resyncIntervalMs: number;
  restart: RestartSettings;
}

const MAX_ROUNDS = 3;

/** What a round did: the next round verifies a replace, or reports a restart request. */
type Acted = 'replaced' | 'restarted' | 'nothing';

export class Agent {
  private setup: { options: AgentOptions; watched: Watched };
  private readonly scheduler: Scheduler;
  private readonly inputs: Inputs;
  private readonly journal: JournalKeeper;
  private readonly restarts: RestartRunner;
  private readonly board: StatusBoard;
  private readonly recorder: AgentRecorder;
  /** The last round's plan, decision and observation: what the status tells. */
  private outcome: (Outcome & { decision: Decision }) | undefined;
  private fights: FightState = NO_FIGHTS;
  /** The prefixes the last round replaced: what its verification holds to account. */
  private justReplaced = new Set<string>();
  private error: Reason | null = null;

  constructor(
    private readonly deps: AgentDeps,
    options: AgentOptions,
  ) {
    const { log, clock } = deps;
    this.setup = { options, watched: watchedOf(options.config) };
    this.recorder = deps.recorder ?? NO_RECORDER;
    this.scheduler = new Scheduler({
      log,
      clock,
      random: deps.random,
      pass: () => this.pass(),
    });
    const wake = (why: string, readMode?: boolean, routeEvent?: boolean) =>
      this.scheduler.kick(why, readMode, routeEvent);
    this.inputs = new Inputs(
      {
        dataplane: deps.dataplane,
        readMode: deps.readMode,
        log,
        clock,
        recorder: this.recorder,
        wake,
        settlingIn: (ms) => this.scheduler.modeSettlingIn(ms),
      },
      options.modePath,
    );
    this.journal = new JournalKeeper({ journal: deps.journal, clock, bootId: deps.bootId ?? null, log });
    this.restarts = new RestartRunner({ strategy: deps.strategy, log, wake });
    this.board = new StatusBoard(log, reason('ModeNotRead', 'starting'));
  }

  /** Reads the journal; an unreadable one is set aside and reported, never fatal. */
  async init(): Promise<void> {
    await this.journal.load();
  }

  start(): void {
    const { options, watched } = this.setup;
    this.inputs.listen(watched, this.deps.watchMode, options.modePath);
    this.scheduler.resyncEvery(options.resyncIntervalMs);
    this.scheduler.kick('start');
  }

  /** New settings (SIGHUP): resolves after a full pass under them. */
  async reconfigure(options: AgentOptions, watchMode: AgentDeps['watchMode']): Promise<void> {
    this.setup = { options, watched: watchedOf(options.config) };
    await this.inputs.close();
    this.inputs.listen(this.setup.watched, watchMode, options.modePath);
    this.scheduler.resyncEvery(options.resyncIntervalMs);
    await this.scheduler.settle();
  }

  /** Resolves after a pass that started after this call has ended. */
  settle(): Promise<void> {
    return this.scheduler.settle();
  }

  /** Stops waking up, waits for the pass under way and a restart request on its way (recording its answer), and releases everything. */
  async stop(): Promise<void> {
    const halted = this.scheduler.stop();
    await this.inputs.close();
    await halted;
    // Its answer wakes no pass now: execute records it here (a journal write, no kernel
    // change), so the next agent finds how the request went, not one still under way.
    await this.restarts.settled();
    const answer = this.restarts.answer;
    this.restarts.took(answer);
    await execute(
      this.parts(),
      { records: heard(this.journal.data.migration, answer, this.deps.clock.now()).records, steps: [] },
      this.inputs.desired.mode,
    );
  }

  /** What stop() still waits on: the pass under way, a restart request on its way, or nothing. */
  waitingOn(): 'pass' | 'restart' | null {
    if (this.scheduler.busy) return 'pass';
    return this.restarts.inFlight ? 'restart' : null;
  }

  /** Asks for a pass (scheduler.ts): only a netlink event passes readMode false, only a route event routeEvent true. */
  kick(why: string, readMode = true, routeEvent = false): void {
    this.scheduler.kick(why, readMode, routeEvent);
  }

  /** Called after each pass; `changed` when the phase or its reasons changed. */
  onStatus(listener: (s: StatusReport, changed: boolean) => void): void {
    this.board.onStatus(listener);
  }

  isReady(): boolean {
    return this.board.ready;
  }

  /** Monotonic time (Clock.now) of the last time the loop started or ended a pass. */
  lastProgressAt(): number {
    return this.scheduler.lastProgressAt;
  }

  isBusy(): boolean {
    return this.scheduler.busy;
  }

  /** The status as of the last finished pass (status-board.ts). */
  status(): StatusReport {
    return this.board.current(this.report);
  }

  private readonly report: BuildReport = (summary, lastReconcile) =>
    statusReport({
      outcome: this.outcome,
      desired: this.inputs.desired,
      migration: this.journal.data.migration,
      restarts: this.journal.data.restarts.length,
      strategy: this.deps.strategy.name,
      config: this.setup.options.config,
      warnings: [...(this.journal.warning ? [this.journal.warning] : []), ...(this.deps.missing ?? [])],
      error: this.error,
      summary,
      wallOffsetMs: this.journal.wallOffset(),
      lastReconcile,
    });

  private async pass(): Promise<PassEnd> {
    const startedAt = this.deps.clock.now();
    // docs/design.md, "The echo window": an echo not seen by now comes late; this pass observes anyway.
    this.inputs.forgetEchoes();
    const routeEventOnly = !this.scheduler.takeFullScan();
    const end: PassEnd = {};
    let failedWith: string | null = null;
    try {
      if (this.scheduler.takeModeRead()) await this.inputs.readDesired();
      let acted: Acted = 'nothing';
      for (let round = 0; round < MAX_ROUNDS; round++) {
        acted = await this.round(acted === 'replaced', routeEventOnly, round === 0);
        if (acted === 'nothing') break;
      }
      // No replace is left unverified: after a last round that replaced, one more that only
      // verifies and decides (for the status), carrying out nothing: what else it finds, and a
      // restart's answer heard meanwhile, are left to the next pass, which it asks for.
      if (acted === 'replaced') {
        const last = await this.look(true, routeEventOnly, false, false);
        end.again = last.steps.length > 0 || last.records.length > 0;
      }
      end.wakeInMs = this.outcome?.decision.wakeInMs;
      this.error = null;
      this.scheduler.succeeded();
    } catch (err) {
      const e = err as Error & { code?: string };
      failedWith = errorCode(e);
      // A route that changed under a replace: look again at once, then back off.
      const { attempt, delayMs } = this.scheduler.failed(e.code);
      this.error =
        e.code === 'ERR_GWMODE_JOURNAL_WRITE'
          ? reason(
              'JournalUnwritable',
              `refusing to change routes or restart ovnkube-node: the change cannot be journaled (attempt ${attempt}, retrying in ${delayMs} ms): ${e.message}`,
            )
          : reason('ReconcileFailed', `reconcile failed (attempt ${attempt}, retrying in ${delayMs} ms): ${e.message}`);
      this.deps.log.error({ err: e, attempt, retryInMs: delayMs }, 'reconcile failed');
    }
    const lag = this.journal.lag;
    if (this.error === null && lag !== null) {
      // The node is as the loop decided; only the record is behind.
      const delay = this.scheduler.retryLater(lag.attempts, 'journal retry');
      this.error = reason(
        'JournalUnwritable',
        `the journal lags behind: ${lag.what} was carried out but could not be recorded (attempt ${lag.attempts}, retrying in ${delay} ms): ${lag.error}`,
      );
    }
    this.recorder.reconciled(startedAt, this.scheduler.progressed(), failedWith);
    this.board.publish(
      summaryOf(this.outcome, this.error, this.board.summary.reasons),
      this.deps.clock.wall(),
      this.report,
    );
    return end;
  }

  /**
   * One round: observe -> fights -> plan -> decide -> execute. After one that acted,
   * another looks at the outcome: after replaces it is the verification (nothing may be
   * planned for the routes just replaced; other routes set back meanwhile are repaired);
   * after a restart request it reports how the request went.
   */
  private async round(verifying: boolean, routeEventOnly: boolean, first: boolean): Promise<Acted> {
    const decision = await this.look(verifying, routeEventOnly, first);
    await execute(this.parts(), decision, this.inputs.desired.mode);
    if (decision.steps.some((s) => s.kind === 'replace')) return 'replaced';
    return decision.steps.some((s) => s.kind === 'restart') ? 'restarted' : 'nothing';
  }

  /** What execute may touch: the journal, the restart runner, the kernel (each write's echo expected), the recorder. */
  private parts(): ExecuteParts {
    return {
      journal: this.journal,
      restarts: this.restarts,
      writes: this.inputs.ownWrites(),
      recorder: this.recorder,
      log: this.deps.log,
      strategy: this.deps.strategy.name,
      applied: (actions, note) => {
        this.fights = recordApplied(this.fights, actions, this.deps.clock.now(), note);
        if (note === undefined) this.justReplaced = new Set(actions.map((a) => a.key.prefix));
      },
    };
  }

  /**
   * Observe, track fights, plan, verify what the last round replaced, and decide. A pass's
   * first round also puts on record what the journal lags behind; a round that acts, a
   * restart's answer heard since the last decision.
   */
  private async look(verifying: boolean, routeEventOnly: boolean, first: boolean, acting = true): Promise<Decision> {
    const { options, watched } = this.setup;
    const { config, restart } = options;
    const answer = acting ? this.restarts.answer : null;
    const observed = await observe(this.deps.dataplane, watched, this.deps.probe, routeEventOnly);
    const now = this.deps.clock.now();
    const desired = this.inputs.desired;
    const hops = new Map<string, NextHop>();
    for (const c of config.serviceCidrs) {
      const routes = observed.routes.get(c.text) ?? [];
      const [only, ...more] = routes;
      if (only && more.length === 0) hops.set(c.text, only.nextHop);
    }
    this.fights = trackFights(this.fights, {
      situation: { desiredMode: desired.mode, ovnkube: observed.ovnkube.id },
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
      if (unheld.length > 0)
        throw new VerifyError(`after replacing, still out of sync: ${unheld.map((a) => a.reason.message).join('; ')}`);
    }
    this.justReplaced = new Set();
    const migration = this.journal.data.migration;
    const target = needsTarget(planned, desired.mode, heard(migration, answer, now).migration, restart.strategy)
      ? await this.deps.strategy.find()
      : null;
    this.restarts.took(answer);
    const decision = decide({
      plan: planned,
      desired: desired.mode,
      migration,
      restarts: this.journal.data.restarts,
      ovnkube: observed.ovnkube,
      target,
      settings: restart,
      now,
      wallOffsetMs: this.journal.wallOffset(),
      restartInFlight: this.restarts.inFlight,
      answer,
      journalLags: first && this.journal.lag !== null,
    });
    this.outcome = { plan: planned, decision, observed, suspensions, restart: decision.restart };
    return decision;
  }
}
