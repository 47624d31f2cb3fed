// Restarting ovnkube-node after a migration, exactly once, and proving the node
// settled. Called by the owner loop after every pass; holds the only restart state.
//
//  1. A migration is "the service routes were replaced towards desired mode M". It
//     needs one restart, unless the journal's last restart already belongs to M (an
//     agent killed between journal and restart comes back to that entry and does not
//     restart again).
//  2. The restart is journaled (fsync) before it is requested, and rate limited
//     (--restart-min-interval, three an hour): past that, phase Degraded until allowed.
//  3. Verify: a new ovnkube-node (another container id, or another pid) running M,
//     within --restart-timeout; then the routes are watched for --settle (longer
//     than ovnkube-node's own 30 s management-port check) before Converged.
import type { Logger } from 'pino';
import type { GatewayMode, OvnkubeObservation, Phase } from '../core/types.js';
import type { Journal, JournalData } from './journal.js';
import { restartAllowed, type RateLimit } from './policy.js';
import type { RestartStrategy, Target } from './strategy.js';

export interface RestartSettings {
  strategy: RestartStrategy;
  limit: RateLimit;
  timeoutMs: number;
  settleMs: number;
  /** How often to look for the new ovnkube-node while waiting for it. */
  pollMs: number;
  /** Whether the mode of the new ovnkube-node can be checked (--ovnkube-mode-check proc). */
  modeChecked: boolean;
  /** Test hook: runs between the journal write and the restart request. */
  afterJournal?: () => void;
}

export interface RestartStatus {
  strategy: string;
  required: boolean;
  last: { at: string; target: string; result: string; error: string | null } | null;
  count: number;
  nextAllowedAt: string | null;
}

export interface StepInput {
  desired: GatewayMode | null;
  /** Replaces carried out in this pass. */
  applied: number;
  ovnkube: OvnkubeObservation;
}

export interface StepResult {
  /** Overrides the plan's phase when set. */
  phase?: Phase;
  reasons: string[];
  /** When the loop should look again, if no event comes first. */
  wakeInMs?: number;
}

interface Verifying {
  mode: GatewayMode;
  old: Target;
  deadline: number;
  settleUntil: number | null;
  failed: string | null;
}

export class RestartCoordinator {
  private data: JournalData = { restarts: [] };
  /** A migration whose restart is still to be done. */
  private pending: GatewayMode | null = null;
  private verifying: Verifying | null = null;
  private required = false;
  private requiredSincePid: number | null = null;
  private nextAllowedAt: number | null = null;

  constructor(
    private readonly settings: RestartSettings,
    private readonly journal: Journal,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  async init(): Promise<void> {
    this.data = await this.journal.load();
  }

  private lastRecord() {
    return this.data.restarts[this.data.restarts.length - 1];
  }

  async step(input: StepInput): Promise<StepResult> {
    const now = this.now();
    if (input.desired === null) return { reasons: [] };
    if (this.pending && this.pending !== input.desired) this.pending = null;
    if (this.verifying && this.verifying.mode !== input.desired) this.verifying = null;
    if (input.applied > 0 && this.lastRecord()?.mode !== input.desired && !this.verifying) this.pending = input.desired;

    if (this.verifying) return this.verify(this.verifying, input, now);
    if (!this.pending) return this.noneRequired(input);

    const mode = this.pending;
    if (this.settings.strategy.name === 'none') {
      if (!this.required) this.requiredSincePid = input.ovnkube.pid;
      this.required = true;
      this.pending = null;
      return this.noneRequired(input);
    }
    const allowed = restartAllowed(this.data.restarts.map((r) => r.at), now, this.settings.limit);
    if (!allowed.allowed) {
      this.nextAllowedAt = allowed.nextAllowedAt;
      return {
        phase: 'Degraded',
        reasons: [`ovnkube-node must be restarted for the migration to ${mode}, but ${allowed.reason}; next allowed at ${new Date(allowed.nextAllowedAt).toISOString()}`],
        wakeInMs: Math.max(1000, allowed.nextAllowedAt - now),
      };
    }
    this.nextAllowedAt = null;
    const found = await this.settings.strategy.find();
    if ('error' in found) {
      return { phase: 'Degraded', reasons: [`cannot restart ovnkube-node for the migration to ${mode}: ${found.error}`], wakeInMs: this.settings.pollMs * 10 };
    }
    const record = { mode, at: now, target: found.target.describe, result: 'requested' as const, error: null };
    this.data = { restarts: [...this.data.restarts, record] };
    await this.journal.save(this.data);
    this.settings.afterJournal?.();
    this.pending = null;
    this.log.info({ strategy: this.settings.strategy.name, target: found.target.describe, mode }, `restarting ovnkube-node: ${found.target.describe}`);
    try {
      await this.settings.strategy.restart(found.target);
      this.replaceLast({ ...record, result: 'stopped' });
    } catch (err) {
      const message = (err as Error).message;
      this.replaceLast({ ...record, result: 'failed', error: message });
      await this.journal.save(this.data);
      this.log.error({ err, target: found.target.describe }, 'restart of ovnkube-node failed');
      return { phase: 'Degraded', reasons: [`restart of ovnkube-node (${found.target.describe}) failed: ${message}`] };
    }
    await this.journal.save(this.data);
    this.verifying = { mode, old: found.target, deadline: now + this.settings.timeoutMs, settleUntil: null, failed: null };
    return this.verify(this.verifying, input, now);
  }

  private replaceLast(record: JournalData['restarts'][number]): void {
    this.data = { restarts: [...this.data.restarts.slice(0, -1), record] };
  }

  private noneRequired(input: StepInput): StepResult {
    // With --restart none, someone else restarts ovnkube-node; a new pid clears the flag.
    if (this.required && input.ovnkube.pid !== null && input.ovnkube.pid !== this.requiredSincePid) this.required = false;
    if (!this.required) return { reasons: [] };
    // The routes are right; the restart is the operator's, as --restart none asked.
    return { reasons: [`ovnkube-node must be restarted for the migration to ${input.desired} (--restart none: restart it by hand)`] };
  }

  private async verify(v: Verifying, input: StepInput, now: number): Promise<StepResult> {
    if (v.failed) return { phase: 'Degraded', reasons: [v.failed] };
    if (v.settleUntil === null) {
      const found = await this.settings.strategy.find();
      const isNew = 'target' in found && found.target.id !== v.old.id;
      const modeOk = !this.settings.modeChecked || input.ovnkube.mode === v.mode;
      if (isNew && modeOk) {
        v.settleUntil = now + this.settings.settleMs;
        this.log.info({ target: found.target.describe, settleMs: this.settings.settleMs }, 'a new ovnkube-node is running: watching the routes settle');
      } else if (now >= v.deadline) {
        v.failed = `ovnkube-node did not come back running ${v.mode} within ${Math.round(this.settings.timeoutMs / 1000)}s of its restart (${v.old.describe})`;
        this.log.error({ old: v.old.describe }, v.failed);
        return { phase: 'Degraded', reasons: [v.failed] };
      } else {
        const seen = 'target' in found ? `${found.target.describe} (the old one)` : found.error;
        return {
          phase: 'Progressing',
          reasons: [`restarted ovnkube-node (${v.old.describe}); waiting for a new one running ${v.mode}: ${seen}`],
          wakeInMs: this.settings.pollMs,
        };
      }
    }
    const settleUntil = v.settleUntil;
    if (now < settleUntil) {
      return {
        phase: 'Progressing',
        reasons: [`a new ovnkube-node runs ${v.mode}; watching the service routes until ${new Date(settleUntil).toISOString()}`],
        wakeInMs: settleUntil - now,
      };
    }
    this.verifying = null;
    this.log.info({ mode: v.mode }, 'ovnkube-node restarted and the routes settled');
    return { reasons: [] };
  }

  /** Whether a restart is under way or awaited (then a new ovnkube-node is expected, not an input change). */
  busy(): boolean {
    return this.verifying !== null || this.pending !== null;
  }

  status(): RestartStatus {
    const last = this.lastRecord();
    return {
      strategy: this.settings.strategy.name,
      required: this.required || this.pending !== null || this.verifying !== null,
      last: last ? { at: new Date(last.at).toISOString(), target: last.target, result: last.result, error: last.error } : null,
      count: this.data.restarts.length,
      nextAllowedAt: this.nextAllowedAt === null ? null : new Date(this.nextAllowedAt).toISOString(),
    };
  }

  close(): void {
    this.settings.strategy.close();
  }
}
