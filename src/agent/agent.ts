// The daemon's owner loop: one owner of the state, everything else only wakes it. Each pass runs
// the engine the one-shot commands run (engine.ts); its parts and races: docs/design.md.
import { heard, type RestartSettings, type Summary } from '../core/decide.js';
import { NO_FIGHTS } from '../core/fights.js';
import { watchedOf } from '../core/planner.js';
import { reason, type Reason } from '../core/reasons.js';
import { errorCode, NO_RECORDER } from '../core/recorder.js';
import type { PlannerConfig } from '../core/types.js';
import type { ModeWatch } from '../mode/source.js';
import type { RestartStrategy } from '../restart/strategy.js';
import { statusReport, summaryOf, type StatusReport } from '../status/report.js';
import { runPass, type Engine, type LoopState } from './engine.js';
import { execute, RestartRunner } from './execute.js';
import { Inputs, type InputsDeps } from './inputs.js';
import { JournalKeeper, type JournalKeeperDeps } from './journal-keeper.js';
import { Scheduler, type PassEnd } from './scheduler.js';

export interface AgentDeps
  extends
    Pick<Engine, 'dataplane' | 'probe' | 'log' | 'clock' | 'recorder'>,
    Pick<InputsDeps, 'readMode'>,
    Pick<JournalKeeperDeps, 'journal'> {
  strategy: RestartStrategy;
  watchMode: (path: string, onChange: () => void) => ModeWatch;
  /** The journal's monotonic times are trusted only within one boot (journal-time.ts); null: unknown. */
  bootId?: string | null;
  random: () => number;
  /** What the process lacks (a capability), found at start: shown as warnings. */
  missing?: string[];
}

export interface AgentOptions {
  config: PlannerConfig;
  modePath: string;
  resyncIntervalMs: number;
  restart: RestartSettings;
}

const MAX_ROUNDS = 3;

type Listener = (s: StatusReport, changed: boolean) => void;

export class Agent {
  private options: AgentOptions;
  private readonly scheduler: Scheduler;
  private readonly inputs: Inputs;
  private readonly journal: JournalKeeper;
  private readonly restarts: RestartRunner;
  private readonly state: LoopState = { fights: NO_FIGHTS };
  private error: Reason | null = null;
  /** The last finished pass's (one read in between could say Converged beside a route out of sync). */
  private said: Summary = { phase: 'Waiting', reasons: [reason('ModeNotRead', 'starting')] };
  private published: StatusReport | undefined;
  private readonly listeners: Listener[] = [];

  constructor(
    private readonly deps: AgentDeps,
    options: AgentOptions,
  ) {
    const { log, clock } = deps;
    this.options = options;
    this.scheduler = new Scheduler({ log, clock, random: deps.random, pass: () => this.pass() });
    const recorder = deps.recorder ?? NO_RECORDER;
    this.inputs = new Inputs({ ...deps, log, clock, recorder, scheduler: this.scheduler }, options.modePath);
    this.journal = new JournalKeeper({ journal: deps.journal, clock, bootId: deps.bootId ?? null, log });
    this.restarts = new RestartRunner(deps.strategy, log, (why) => this.kick(why));
  }

  async init(): Promise<void> {
    await this.journal.load();
  }

  start(): void {
    const { config, modePath, resyncIntervalMs } = this.options;
    this.inputs.listen(watchedOf(config), this.deps.watchMode, modePath);
    this.scheduler.resyncEvery(resyncIntervalMs);
    this.scheduler.kick('start');
  }

  /** New settings (SIGHUP): resolves after a full pass under them. */
  async reconfigure(options: AgentOptions): Promise<void> {
    this.options = options;
    await this.inputs.close();
    this.start();
    await this.scheduler.settle();
  }

  settle(): Promise<void> {
    return this.scheduler.settle();
  }

  /** Stops waking up, waits for the pass under way and a restart request on its way (its answer recorded). */
  async stop(): Promise<void> {
    const halted = this.scheduler.stop();
    await this.inputs.close();
    await halted;
    // No pass will record the answer now: recorded here, the next agent finds how the request went.
    await this.restarts.settled;
    const answer = this.restarts.answer;
    this.restarts.took(answer);
    const { records } = heard(this.journal.data.migration, answer, this.deps.clock.now());
    await execute(this.engine(), this.state, { records, steps: [] }, this.inputs.desired.mode);
  }

  waitingOn(): 'pass' | 'restart' | null {
    if (this.scheduler.busy) return 'pass';
    return this.restarts.inFlight ? 'restart' : null;
  }

  kick(why: string, readMode = true, routeEvent = false): void {
    this.scheduler.kick(why, readMode, routeEvent);
  }

  /** Called after each pass; `changed` when the phase or its reasons changed. */
  onStatus(listener: Listener): void {
    this.listeners.push(listener);
  }

  isReady(): boolean {
    return this.published !== undefined;
  }

  lastProgressAt(): number {
    return this.scheduler.lastProgressAt;
  }

  isBusy(): boolean {
    return this.scheduler.busy;
  }

  /** As of the last finished pass; before the first, one built now. */
  status(): StatusReport {
    return this.published ?? this.report(this.said, null);
  }

  private report(summary: Summary, lastReconcile: number | null): StatusReport {
    return statusReport({
      outcome: this.state.outcome,
      desired: this.inputs.desired,
      migration: this.journal.data.migration,
      restarts: this.journal.data.restarts.length,
      strategy: this.deps.strategy.name,
      config: this.options.config,
      warnings: [...(this.journal.warning ? [this.journal.warning] : []), ...(this.deps.missing ?? [])],
      error: this.error,
      summary,
      wallOffsetMs: this.journal.wallOffset(),
      lastReconcile,
    });
  }

  private engine(): Engine {
    const restarts = { strategy: this.deps.strategy, runner: this.restarts };
    return { ...this.deps, writes: this.inputs.ownWrites(), journal: this.journal, restarts };
  }

  private async pass(): Promise<PassEnd> {
    const { clock, log } = this.deps;
    const startedAt = clock.now();
    // docs/design.md, "The echo window": an echo not seen by now comes late; this pass observes anyway.
    this.inputs.forgetEchoes();
    const asked = this.scheduler.take();
    const end: PassEnd = {};
    let failedWith: string | null = null;
    try {
      if (asked.readMode) await this.inputs.readDesired();
      const { config, restart } = this.options;
      const target = { mode: this.inputs.desired };
      const input = { config, target, rounds: MAX_ROUNDS, restart, routeEventOnly: !asked.fullScan };
      const { last } = await runPass(this.engine(), input, this.state);
      end.again = !last.acted && last.decision.steps.length + last.decision.records.length > 0;
      end.wakeInMs = this.state.outcome?.decision.wakeInMs;
      this.error = null;
      this.scheduler.succeeded();
    } catch (err) {
      const e = err as Error & { code?: string };
      failedWith = errorCode(e);
      // A route that changed under a replace: look again at once, then back off.
      const { attempt, delayMs } = this.scheduler.failed(e.code);
      const retry = `(attempt ${attempt}, retrying in ${delayMs} ms): ${e.message}`;
      const unjournaled = `refusing to change routes or restart ovnkube-node: the change cannot be journaled ${retry}`;
      if (e.code === 'ERR_GWMODE_JOURNAL_WRITE') this.error = reason('JournalUnwritable', unjournaled);
      else this.error = reason('ReconcileFailed', `reconcile failed ${retry}`);
      log.error({ err: e, attempt, retryInMs: delayMs }, 'reconcile failed');
    }
    const lag = this.journal.lag;
    if (this.error === null && lag !== null) {
      // The node is as the loop decided; only the record is behind.
      const delay = this.scheduler.retryLater(lag.attempts, 'journal retry');
      const why = `the journal lags behind: ${lag.what} was carried out but could not be recorded (attempt ${lag.attempts}, retrying in ${delay} ms): ${lag.error}`;
      this.error = reason('JournalUnwritable', why);
    }
    (this.deps.recorder ?? NO_RECORDER).reconciled(startedAt, this.scheduler.progressed(), failedWith);
    this.publish(summaryOf(this.state.outcome, this.error, this.said.reasons), clock.wall());
    return end;
  }

  /** Logs a phase change once, keeps the report, tells the listeners. */
  private publish(next: Summary, at: number): void {
    const { log } = this.deps;
    if (this.published === undefined) log.info('first reconcile done');
    const text = (s: Summary) => s.reasons.map((r) => r.message).join('\n');
    const changed = next.phase !== this.said.phase || text(next) !== text(this.said);
    const reasons = next.reasons.map((r) => r.message);
    const fields = { from: this.said.phase, to: next.phase, reasons, codes: next.reasons.map((r) => r.code) };
    if (changed) log[next.phase === 'Degraded' ? 'warn' : 'info'](fields, `phase ${next.phase}`);
    this.said = next;
    const report = this.report(next, at);
    this.published = report;
    for (const l of this.listeners) l(report, changed);
  }
}
