// SIGTERM and SIGINT during a one-shot command that changes the kernel (`apply`,
// `rollback --yes`). Before its first change the command is abandoned at once: exit 1,
// nothing changed (main.ts ends the process; beginChanges refuses once a signal came, so
// the work left behind never begins one). From the first change on (for `apply`, the
// journal write before its first replace) the change in flight finishes with its journal
// record, none is begun after it, and the command says what was and was not done, exit 1.
import type { CommandResult } from './exit-codes.js';

/** beginChanges after a signal: the command was abandoned, and changes nothing. */
export class AbandonedError extends Error {
  readonly code = 'ERR_GWMODE_ABANDONED';
}

export class Interruption {
  private signal: string | null = null;
  private changing = false;
  private abandon: (r: CommandResult) => void = () => undefined;
  private readonly abandoned = new Promise<CommandResult>((resolve) => (this.abandon = resolve));

  constructor(private readonly what: string) {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => this.received(sig));
  }

  private received(sig: string): void {
    this.signal ??= sig;
    if (this.changing) return;
    this.abandon({
      code: 1,
      stderr: `ovn-gwmode-agent: ${this.what}: interrupted by ${sig} before any change; nothing changed\n`,
    });
  }

  /** The command's result, or the abandonment when a signal comes before its first change. */
  run(work: () => Promise<CommandResult>): Promise<CommandResult> {
    return Promise.race([work(), this.abandoned]);
  }

  /** From here on a signal lets the change in flight finish instead of abandoning the command. */
  beginChanges(): void {
    if (this.signal !== null && !this.changing)
      throw new AbandonedError(`${this.what}: abandoned on ${this.signal} before any change`);
    this.changing = true;
  }

  /** The signal received, or null: asked before each change. */
  readonly requested = (): string | null => this.signal;
}
