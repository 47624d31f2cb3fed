// The journal as the loop keeps it: in memory (monotonic times), the disk behind it (wall times,
// journal-time.ts). docs/design.md, "The journal unwritable": a write before a change must succeed
// or the change is not made; one after it keeps the record in memory and retries a failed save.
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { EMPTY_JOURNAL, JournalWriteError, type Journal, type JournalData } from '../restart/journal.js';
import { loadOffset, stableOffset, toMonotonic, toWall } from '../restart/journal-time.js';

export interface JournalKeeperDeps {
  journal: Pick<Journal, 'load' | 'save' | 'setAside'>;
  clock: Clock;
  bootId: string | null;
  log: Logger;
}

export class JournalKeeper {
  /** May be ahead of the disk: see lag. */
  data: JournalData = EMPTY_JOURNAL;
  /** The journal found unreadable at start (set aside), as a warning. */
  warning: string | null = null;
  /** What was carried out but is not on disk yet. */
  lag: { what: string; attempts: number; error: string } | null = null;
  /** Wall minus monotonic as on disk; kept while the wall clock has not stepped (journal-time.ts rule 4). */
  private notedOffset: number | null = null;
  /** The unreadable journal could not be moved aside: no save writes over it until it is. */
  private unmoved = false;

  constructor(private readonly deps: JournalKeeperDeps) {}

  wallOffset(): number {
    return this.deps.clock.wall() - this.deps.clock.now();
  }

  /**
   * An unreadable journal is set aside and reported, unless `strict` (rollback's target is in it): then
   * the error goes up. False when it could not be moved aside (a save would write over it).
   */
  async load(strict = false): Promise<boolean> {
    const { journal, clock } = this.deps;
    try {
      const loaded = await journal.load();
      this.notedOffset = loadOffset(loaded, this.deps.bootId, this.wallOffset());
      this.data = toMonotonic(loaded, this.notedOffset, clock.now());
      return true;
    } catch (err) {
      if (strict) throw err;
      const aside = await journal.setAside(clock.wall()).catch((moveErr: Error) => moveErr);
      const where = aside instanceof Error ? `could not be moved aside: ${aside.message}` : `kept as ${aside}`;
      this.warning = `${(err as Error).message} (${where}); a migration it recorded will not be finished by this agent`;
      this.deps.log.error({ err }, this.warning);
      this.unmoved = aside instanceof Error;
      return !this.unmoved;
    }
  }

  /** Before the change, or the change is not made (the error goes up). */
  async before(data: JournalData): Promise<void> {
    await this.save(data);
    this.data = data;
    this.caughtUp();
  }

  /** After the change: kept in memory whatever the disk says. `cause`: a kernel refusal that led to it, logged. */
  async after(data: JournalData, what: string, cause?: unknown): Promise<void> {
    this.data = data;
    try {
      await this.save(data);
      this.caughtUp();
    } catch (err) {
      const attempts = (this.lag?.attempts ?? 0) + 1;
      this.lag = { what, attempts, error: (err as Error).message };
      this.deps.log.error(
        { err, ...(cause !== undefined ? { kernelError: (cause as Error).message } : {}), attempt: attempts },
        `the journal lags behind: ${what} was carried out but could not be recorded; keeping it in memory and retrying`,
      );
    }
  }

  /** Writes what the journal lags behind, if anything. */
  async catchUp(): Promise<void> {
    if (this.lag !== null) await this.after(this.data, this.lag.what);
  }

  private async save(data: JournalData): Promise<void> {
    const { journal, clock } = this.deps;
    // Gone since (removed by hand): nothing is left to write over.
    const gone = (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? null : err);
    const aside = this.unmoved ? await journal.setAside(clock.wall()).catch(gone) : null;
    if (aside instanceof Error) throw new JournalWriteError('over the unreadable one, not moved aside', aside);
    this.unmoved = false;
    this.notedOffset = stableOffset(this.notedOffset, this.wallOffset());
    await journal.save(toWall(data, this.notedOffset, this.deps.bootId));
  }

  private caughtUp(): void {
    if (this.lag === null) return;
    this.deps.log.info({ what: this.lag.what, attempts: this.lag.attempts }, 'the journal caught up');
    this.lag = null;
  }
}
