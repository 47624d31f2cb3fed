// SIGTERM and SIGINT during a one-shot command that changes the kernel (`apply`,
// `rollback --yes`). Before its first change the command is abandoned at once: exit 1,
// one line, nothing changed. From the first change on (for `apply`, the journal write
// that precedes its first replace) the change in flight is finished with its journal
// record, none is begun after it (a put-back would be one), and the command says what
// was done and what was not, and exits 1. A second signal changes nothing; SIGKILL
// still ends the process, and the journal then tells the next agent or rollback.
export class Interruption {
  private signal: string | null = null;
  private changing = false;

  constructor(private readonly what: string) {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => this.received(sig));
  }

  private received(sig: string): void {
    this.signal ??= sig;
    if (this.changing) return;
    process.stderr.write(`ovn-gwmode-agent: ${this.what}: interrupted by ${sig} before any change; nothing changed\n`);
    process.exit(1);
  }

  /** From here on a signal lets the change in flight finish instead of ending the process. */
  beginChanges(): void {
    this.changing = true;
  }

  /** The signal received, or null: asked before each change. */
  readonly requested = (): string | null => this.signal;
}
