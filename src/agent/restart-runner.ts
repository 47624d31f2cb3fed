// The restart request in flight, its answer, and the stop (agent.ts, race 7).
//  1. A request is journaled (synced) before it goes out: a restart is never requested twice.
//  2. Its answer is not awaited by the pass that asked (a CRI stop waits out ovnkube-node's
//     grace period): the answer, when it comes, wakes a pass that records it.
//  3. The answer is recorded only into the migration it answers: the record may have moved
//     on meanwhile (a new ovnkube-node seen, another desired mode).
//  4. No second request while one is under way; stop waits for the one on its way and
//     records its answer, so the next agent finds how it went.
import type { Logger } from 'pino';
import type { RestartStep } from '../core/decide.js';
import { errorCode, type AgentRecorder } from '../core/recorder.js';
import type { RestartStrategy } from '../restart/strategy.js';
import type { JournalKeeper } from './journal-keeper.js';

export interface RestartRunnerDeps {
  strategy: RestartStrategy;
  journal: JournalKeeper;
  recorder: AgentRecorder;
  log: Logger;
  clock: { now(): number };
  /** Wakes a pass (the answer is in). */
  wake: (why: string) => void;
}

export class RestartRunner {
  private requesting: Promise<void> = Promise.resolve();
  private pending = false;
  private answer: { step: RestartStep; err: unknown } | null = null;

  constructor(private readonly deps: RestartRunnerDeps) {}

  /** A request the runtime has not answered yet. */
  get inFlight(): boolean {
    return this.pending;
  }

  async request(step: RestartStep): Promise<void> {
    const { journal, strategy, log } = this.deps;
    if (this.pending) {
      log.warn({ target: step.target.describe }, 'a restart request is still under way: not requesting another');
      return;
    }
    const now = this.deps.clock.now();
    await journal.before({ ...journal.data, migration: step.migration, restarts: [...journal.data.restarts, now] });
    log.info({ strategy: strategy.name, target: step.target.describe, mode: step.migration.mode }, `restarting ovnkube-node: ${step.target.describe}`);
    this.pending = true;
    const answered = (err: unknown) => {
      this.pending = false;
      this.answer = { step, err };
      this.deps.wake('restart request answered');
    };
    this.requesting = strategy.restart(step.target).then(
      () => answered(null),
      (err: unknown) => answered(err ?? new Error('the restart request failed')),
    );
  }

  /** Records how the last request went (point 3); nothing when no answer is waiting. */
  async takeAnswer(): Promise<void> {
    const answer = this.answer;
    if (answer === null) return;
    this.answer = null;
    const { journal, recorder, log } = this.deps;
    const { step, err } = answer;
    const m = journal.data.migration;
    const same = m !== null && m.mode === step.migration.mode && m.startedAt === step.migration.startedAt && m.attempts === step.migration.attempts;
    const base = { strategy: this.deps.strategy.name, mode: step.migration.mode, target: step.target.describe };
    if (err !== null) {
      log.error({ err, target: step.target.describe }, 'restart of ovnkube-node failed');
      recorder.restart({ ...base, result: 'failed', code: errorCode(err) });
      // A new ovnkube-node already seen (done) makes the failure moot: the restart happened.
      if (same && m.restart === 'requested') {
        await journal.after({ ...journal.data, migration: { ...m, restart: 'failed', outcome: 'failed', lastError: (err as Error).message } }, 'a failed restart request');
      }
      return;
    }
    if (same) await journal.after({ ...journal.data, migration: { ...m, outcome: 'stopped' } }, 'the restart request');
    recorder.restart({ ...base, result: 'stopped', code: null });
  }

  /** Point 4: waits for a request on its way (never cut short), then records its answer. */
  async stop(): Promise<void> {
    await this.requesting;
    await this.takeAnswer();
  }
}
