// The daemon's owner loop. One owner of the state; everything else only wakes it.
//
// Wake-ups: a change of the mode file, a netlink event about a watched prefix, a
// watched link or any address, a `lost` notification (the kernel dropped events: a
// full observation is what every pass does anyway), the periodic resync, and the
// retry timer after a failure. Wake-ups during a pass set `dirty`, and one more pass
// runs after it: passes never overlap, and a burst of events costs one pass.
//
// Races this handles:
//  1. A route changed by someone else between our observation and our replace: the
//     replace is still atomic, and the verification pass that follows re-observes
//     and re-plans; a mismatch is an error, retried with backoff.
//  2. The mode file half-written or garbled: the last valid mode is kept (none at
//     start, so nothing is ever applied before the first valid input).
//  3. Netlink notifications lost under load: `lost` forces a pass.
//  4. Something that keeps setting a route back (a misconfigured ovnkube-node): the
//     third set-back within ten minutes suspends repairs of that CIDR (FightTracker).
//  5. A restart under way: the restart coordinator owns it; the loop only asks it to
//     step after each pass and wakes when it asks to look again.
import type { Logger } from 'pino';
import { LEGACY_LOCAL_GATEWAY_LINK } from '../core/planner.js';
import type { DesiredMode, Phase, Plan, PlannerConfig } from '../core/types.js';
import type { Dataplane, DataplaneEvent, Subscription } from '../dataplane/types.js';
import type { ModeRead, ModeWatch } from '../mode/source.js';
import type { StatusReport } from '../status/report.js';
import { VERSION } from '../version.js';
import type { OvnkubeProbe } from './observe.js';
import { reconcile, type ReconcileHooks, type ReconcileResult } from './reconcile.js';
import { describeShape } from '../core/planner.js';
import type { RestartCoordinator, RestartStatus } from '../restart/coordinator.js';
import { FightTracker } from '../restart/policy.js';

export interface AgentDeps {
  dataplane: Dataplane;
  /** Restarts ovnkube-node after a migration; absent means never (and never required). */
  restart?: RestartCoordinator;
  probe: OvnkubeProbe;
  log: Logger;
  readMode: () => Promise<ModeRead>;
  watchMode: (onChange: () => void) => ModeWatch;
  /** Wall-clock time: the status report, restart deadlines, fight windows. */
  now: () => Date;
  random: () => number;
}

export interface AgentOptions {
  config: PlannerConfig;
  modePath: string;
  resyncIntervalMs: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
}

/** Capped, jittered exponential backoff: attempt 1 waits about base, doubling to max. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: number): number {
  const capped = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(capped * (0.5 + random / 2));
}

export class Agent {
  private desired: DesiredMode;
  private plan: Plan | undefined;
  private lastReconcile: Date | null = null;
  private lastError: string | null = null;
  private phase: Phase = 'Waiting';
  private reasons: string[] = ['starting'];
  private ovnkubeMode: StatusReport['ovnkubeMode'] = null;
  private running = false;
  private dirty = false;
  private stopped = false;
  private failures = 0;
  private ready = false;
  private lastProgress = 0;
  private resyncTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private kickTimer: NodeJS.Immediate | undefined;
  private subscription: Subscription | undefined;
  private modeWatch: ModeWatch | undefined;
  private readonly listeners: Array<(s: StatusReport, phaseChanged: boolean) => void> = [];
  private readonly watchedPrefixes: Set<string>;
  private readonly watchedLinks: Set<string>;
  private idle: Promise<void> = Promise.resolve();

  private readonly fight = new FightTracker();
  private lastInputs = '';
  private wakeTimer: NodeJS.Timeout | undefined;
  private passes = 0;
  private passWaiters: Array<() => void> = [];
  private wedged = false;

  constructor(
    private readonly deps: AgentDeps,
    private options: AgentOptions,
  ) {
    this.desired = { mode: null, source: { path: options.modePath, error: 'not read yet' } };
    this.watchedPrefixes = new Set();
    this.watchedLinks = new Set();
    this.watchOptions();
  }

  private watchOptions(): void {
    const { config } = this.options;
    const families = new Set(config.serviceCidrs.map((c) => c.family));
    this.watchedPrefixes.clear();
    for (const p of [
      ...config.serviceCidrs.map((c) => c.text),
      ...(families.has(4) ? ['0.0.0.0/0'] : []),
      ...(families.has(6) ? ['::/0'] : []),
    ]) {
      this.watchedPrefixes.add(p);
    }
    this.watchedLinks.clear();
    for (const l of [config.gatewayInterface, config.managementInterface, LEGACY_LOCAL_GATEWAY_LINK]) this.watchedLinks.add(l);
  }

  start(): void {
    this.subscription = this.deps.dataplane.subscribe((e) => this.onEvent(e));
    this.modeWatch = this.deps.watchMode(() => this.kick('mode file changed'));
    this.resyncTimer = setInterval(() => this.kick('periodic resync'), this.options.resyncIntervalMs);
    this.kick('start');
  }

  /**
   * New settings (SIGHUP). The mode file is re-read and the mode watch restarted;
   * resolves after a full pass under the new settings.
   */
  async reconfigure(options: AgentOptions, watchMode: AgentDeps['watchMode']): Promise<void> {
    this.options = options;
    this.watchOptions();
    this.desired = { ...this.desired, source: { path: options.modePath, error: this.desired.source.error } };
    await this.modeWatch?.close();
    this.modeWatch = watchMode(() => this.kick('mode file changed'));
    clearInterval(this.resyncTimer);
    this.resyncTimer = setInterval(() => this.kick('periodic resync'), options.resyncIntervalMs);
    await this.settle();
  }

  /** Resolves after a pass that started after this call has ended. */
  settle(): Promise<void> {
    const target = this.passes + (this.running ? 2 : 1);
    this.kick('settle');
    return new Promise((resolve) => {
      const check = () => (this.passes >= target || this.stopped ? resolve() : this.passWaiters.push(check));
      check();
    });
  }

  /**
   * Test hook (issue #5 asks for one): the next pass hangs forever, as a pass stuck
   * on a kernel or runtime call that never answers would. Only wired to a signal when
   * GWMODE_TEST_HOOKS=1.
   */
  wedgeForTest(): void {
    this.wedged = true;
    this.kick('test hook: wedge');
  }

  /** Stops waking up, waits for the pass under way, and releases everything. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.resyncTimer);
    clearTimeout(this.retryTimer);
    clearTimeout(this.wakeTimer);
    if (this.kickTimer) clearImmediate(this.kickTimer);
    this.subscription?.close();
    await this.modeWatch?.close();
    await this.idle;
  }

  /** Asks for a pass; passes never overlap and wake-ups during one coalesce. */
  kick(why: string): void {
    if (this.stopped) return;
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
    switch (e.kind) {
      case 'lost':
        this.deps.log.warn({ err: e.error }, 'netlink notifications were lost: full resync');
        this.kick('netlink notifications lost');
        return;
      case 'route':
        if (e.table === 254 && this.watchedPrefixes.has(e.prefix)) this.kick(`route ${e.op} ${e.prefix}`);
        return;
      case 'link':
        if (this.watchedLinks.has(e.link.name)) this.kick(`link ${e.op} ${e.link.name}`);
        return;
      case 'address':
        this.kick(`address ${e.op} ${e.address.address}`);
        return;
    }
  }

  private async readDesired(): Promise<void> {
    const read = await this.deps.readMode();
    const path = this.options.modePath;
    if (read.mode !== null) {
      if (read.mode !== this.desired.mode) this.deps.log.info({ from: this.desired.mode, to: read.mode, path }, 'desired mode changed');
      this.desired = { mode: read.mode, source: { path, error: null } };
      return;
    }
    if (read.error !== this.desired.source.error) {
      this.deps.log.error({ path, error: read.error, kept: this.desired.mode }, 'mode file invalid: keeping the last valid desired mode');
    }
    this.desired = { mode: this.desired.mode, source: { path, error: read.error } };
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
  }

  private async once(): Promise<void> {
    this.lastProgress = Date.now();
    if (this.wedged) await new Promise<never>(() => undefined);
    try {
      await this.readDesired();
      const desired = this.desired;
      const result = await reconcile(this.deps, desired, this.options.config, true, this.fightHooks(desired.mode));
      await this.conclude(desired.mode, result);
    } catch (err) {
      this.failures++;
      const e = err as Error;
      this.lastError = e.message;
      const delay = backoffMs(this.failures, this.options.retryBaseMs ?? 1000, this.options.retryMaxMs ?? 60_000, this.deps.random());
      this.deps.log.error({ err: e, attempt: this.failures, retryInMs: delay }, 'reconcile failed');
      clearTimeout(this.retryTimer);
      if (!this.stopped) this.retryTimer = setTimeout(() => this.kick('retry'), delay);
      this.setPhase('Degraded', [`reconcile failed (attempt ${this.failures}, retrying in ${delay} ms): ${e.message}`]);
    }
    this.lastReconcile = this.deps.now();
    this.lastProgress = Date.now();
    if (!this.ready) {
      this.ready = true;
      this.deps.log.info({ phase: this.phase }, 'first reconcile done');
    }
    this.passes++;
    for (const w of this.passWaiters.splice(0)) w();
    this.emit(false);
  }

  /** Fight tracking around each replace (see FightTracker). */
  private fightHooks(mode: DesiredMode['mode']): ReconcileHooks {
    const now = () => this.deps.now().getTime();
    return {
      holdBack: (a) =>
        this.fight.beforeReplace(a.cidr.text, describeShape(a.from), now(), `is ovnkube-node really running ${mode} gateway mode on a 4.8/4.9 build?`),
      isSuspended: (cidr) => this.fight.suspensions().has(cidr),
      onApplied: (a) => this.fight.applied(a.cidr.text, describeShape(a.to), now()),
    };
  }

  /** After a successful pass: fights, the restart step, and the phase with its reasons. */
  private async conclude(mode: DesiredMode['mode'], result: ReconcileResult): Promise<void> {
    this.plan = result.final;
    this.ovnkubeMode = result.observed.ovnkube.mode;
    // A new desired mode or a new ovnkube-node is a new situation: old fights are forgiven.
    const inputs = `${mode}|${result.observed.ovnkube.pid}`;
    if (this.lastInputs !== '' && inputs !== this.lastInputs) this.fight.reset();
    this.lastInputs = inputs;
    // A suspended route found right again was put right by someone else: lift the suspension.
    const held = this.fight.suspensions();
    for (const r of result.final.routes) if (r.inSync && held.has(r.cidr)) this.fight.clear(r.cidr);

    const step = (await this.deps.restart?.step({ desired: mode, applied: result.applied, ovnkube: result.observed.ovnkube })) ?? { reasons: [] };
    this.lastError = null;
    this.failures = 0;
    const suspended = [...this.fight.suspensions().values()];
    const phase = suspended.length > 0 ? 'Degraded' : (step.phase ?? result.final.phase);
    // The reason that decides the phase comes first: it is the one `status --brief` shows.
    const reasons = step.phase ? [...step.reasons, ...result.final.reasons] : [...result.final.reasons, ...step.reasons];
    this.setPhase(phase, [...suspended, ...reasons]);
    clearTimeout(this.wakeTimer);
    if (step.wakeInMs !== undefined && !this.stopped) this.wakeTimer = setTimeout(() => this.kick('restart check'), step.wakeInMs);
  }

  private setPhase(phase: Phase, reasons: string[]): void {
    const changed = phase !== this.phase || reasons.join('\n') !== this.reasons.join('\n');
    const phaseChanged = phase !== this.phase;
    this.reasons = reasons;
    if (changed) this.deps.log.info({ from: this.phase, to: phase, reasons }, `phase ${phase}`);
    this.phase = phase;
    if (phaseChanged) this.emit(true);
  }

  private emit(phaseChanged: boolean): void {
    const s = this.status();
    for (const l of this.listeners) l(s, phaseChanged);
  }

  /** Called after each pass (phaseChanged false) and on each phase change (true). */
  onStatus(listener: (s: StatusReport, phaseChanged: boolean) => void): void {
    this.listeners.push(listener);
  }

  isReady(): boolean {
    return this.ready;
  }

  /** Date.now() of the last time the loop started or ended a pass. */
  lastProgressAt(): number {
    return this.lastProgress;
  }

  isBusy(): boolean {
    return this.running;
  }

  status(): StatusReport {
    const p = this.plan;
    const suspensions = this.fight.suspensions();
    const restart: RestartStatus = this.deps.restart?.status() ?? { strategy: 'none', required: false, last: null, count: 0, nextAllowedAt: null };
    return {
      desiredMode: this.desired.mode,
      modeSource: this.desired.source,
      ovnkubeMode: this.ovnkubeMode,
      layout: p?.layout ?? 'unknown',
      phase: this.phase,
      reasons: this.reasons,
      routes: (p?.routes ?? this.options.config.serviceCidrs.map((c) => ({ cidr: c.text, family: c.family, observed: null, expected: null, inSync: false }))).map(
        (r) => ({ ...r, repairsSuspended: suspensions.get(r.cidr) ?? null }),
      ),
      restart,
      dryRun: this.options.config.dryRun,
      lastReconcile: this.lastReconcile?.toISOString() ?? null,
      lastError: this.lastError,
      warnings: p?.warnings ?? [],
      version: VERSION,
    };
  }
}
