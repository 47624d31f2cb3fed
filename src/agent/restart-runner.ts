// The restart request in flight, its answer, and the stop (docs/design.md, "A restart request
// slow to answer").
//  1. A request is journaled (synced) before it goes out, by execute (steps.ts), the one
//     writer of the journal: a restart is never requested twice.
//  2. Its answer is not awaited by the pass that asked (a CRI stop waits out ovnkube-node's
//     grace period): the answer, when it comes, wakes a pass whose decision records it
//     (core/decide.ts, `heard`) and execute carries that out; the runner writes nothing itself.
//  3. The answer is recorded only into the migration it answers: the record may have moved
//     on meanwhile (a new ovnkube-node seen, another desired mode).
//  4. No second request while one is under way; stop waits for the one on its way, so that
//     its answer is recorded (agent.ts) and the next agent finds how it went.
import type { Logger } from 'pino';
import type { RestartAnswer, RestartStep } from '../core/decide.js';
import { errorCode } from '../core/recorder.js';
import type { RestartStrategy } from '../restart/strategy.js';

export interface RestartRunnerDeps {
  strategy: RestartStrategy;
  log: Logger;
  /** Wakes a pass (the answer is in). */
  wake: (why: string) => void;
}

export class RestartRunner {
  private requesting: Promise<void> = Promise.resolve();
  private pending = false;
  private heard: RestartAnswer | null = null;

  constructor(private readonly deps: RestartRunnerDeps) {}

  /** A request the runtime has not answered yet. */
  get inFlight(): boolean {
    return this.pending;
  }

  /** The last request's answer, not yet taken into a decision; null when none is waiting. */
  get answer(): RestartAnswer | null {
    return this.heard;
  }

  /** The answer is in a decision about to be carried out (point 2): it is not handed out again. */
  took(answer: RestartAnswer | null): void {
    if (answer !== null && this.heard === answer) this.heard = null;
  }

  /** Called by execute only, once the request is journaled (point 1): sends it without awaiting it. */
  request(step: RestartStep): void {
    const { strategy, log } = this.deps;
    log.info(
      { strategy: strategy.name, target: step.target.describe, mode: step.migration.mode },
      `restarting ovnkube-node: ${step.target.describe}`,
    );
    this.pending = true;
    const answered = (err: unknown) => {
      this.pending = false;
      this.heard = { step, error: err === null ? null : { message: (err as Error).message, code: errorCode(err) } };
      this.deps.wake('restart request answered');
    };
    this.requesting = strategy.restart(step.target).then(
      () => answered(null),
      (err: unknown) => answered(err ?? new Error('the restart request failed')),
    );
  }

  /** Point 4: waits for a request on its way (never cut short). */
  async settled(): Promise<void> {
    await this.requesting;
  }
}
