// The journal as the owner loop keeps it: the record in memory (monotonic times), and the disk
// behind it (wall times, journal-time.ts). A write before a change must succeed or the change is
// not made; one after a change keeps the record in memory and retries a failed save
// (docs/design.md, "The journal unwritable").
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { EMPTY_JOURNAL, type Journal, type JournalData } from '../restart/journal.js';
import { loadOffset, stableOffset, toMonotonic, toWall } from '../restart/journal-time.js';

export interface JournalLag {
  what: string;
  attempts: number;
  error: string;
}

export interface JournalKeeperDeps {
  journal: Pick<Journal, 'load' | 'save' | 'setAside'>;
  clock: Clock;
  /** This boot's id: the journal's monotonic times are trusted only within one boot; null: unknown. */
  bootId: string | null;
  log: Logger;
}

export class JournalKeeper {
  private record: JournalData = EMPTY_JOURNAL;
  private unreadable: string | null = null;
  private behind: JournalLag | null = null;
  /** The offset (wall minus monotonic) the disk is noted with; kept while the wall clock has not stepped (journal-time.ts rule 4). */
  private notedOffset: number | null = null;

  constructor(private readonly deps: JournalKeeperDeps) {}

  /** What the loop goes on from (it may be ahead of the disk: see lag). */
  get data(): JournalData {
    return this.record;
  }

  /** The journal found unreadable at start (set aside), as a warning; null otherwise. */
  get warning(): string | null {
    return this.unreadable;
  }

  /** What was carried out but is not on disk yet; null when the disk has caught up. */
  get lag(): JournalLag | null {
    return this.behind;
  }

  /** Wall minus monotonic time now: how a monotonic time is shown and written. */
  wallOffset(): number {
    return this.deps.clock.wall() - this.deps.clock.now();
  }

  /**
   * Reads the journal; an unreadable one is set aside and reported, never fatal, unless
   * `strict` (rollback: its target is the journal's migration): then the error goes up.
   * False when an unreadable journal could not be moved aside: still in place, a save would
   * write over it (`apply` refuses then; the agent goes on, saying so).
   */
  async load(strict = false): Promise<boolean> {
    try {
      const loaded = await this.deps.journal.load();
      const offset = loadOffset(loaded, this.deps.bootId, this.wallOffset());
      this.notedOffset = offset;
      this.record = toMonotonic(loaded, offset, this.deps.clock.now());
      return true;
    } catch (err) {
      if (strict) throw err;
      let where: string;
      let moved = false;
      try {
        where = `kept as ${await this.deps.journal.setAside(this.deps.clock.wall())}`;
        moved = true;
      } catch (moveErr) {
        where = `could not be moved aside: ${(moveErr as Error).message}`;
      }
      this.unreadable = `${(err as Error).message} (${where}); a migration it recorded will not be finished by this agent`;
      this.deps.log.error({ err }, this.unreadable);
      return moved;
    }
  }

  /** Written before the change, or the change is not made (the error propagates, the pass fails). */
  async before(data: JournalData): Promise<void> {
    await this.deps.journal.save(this.onDisk(data));
    this.record = data;
    this.caughtUp();
  }

  /**
   * After the change: kept in memory whatever the disk says, a failed save kept as the lag.
   * `cause`: the error that led to the change (a kernel refusal), logged beside the journal's.
   */
  async after(data: JournalData, what: string, cause?: unknown): Promise<void> {
    this.record = data;
    try {
      await this.deps.journal.save(this.onDisk(data));
      this.caughtUp();
    } catch (err) {
      const attempts = (this.behind?.attempts ?? 0) + 1;
      this.behind = { what, attempts, error: (err as Error).message };
      this.deps.log.error(
        { err, ...(cause !== undefined ? { kernelError: (cause as Error).message } : {}), attempt: attempts },
        `the journal lags behind: ${what} was carried out but could not be recorded; keeping it in memory and retrying`,
      );
    }
  }

  /** Writes what the journal lags behind, if anything: execute's catch-up record (execute.ts). */
  async catchUp(): Promise<void> {
    if (this.behind !== null) await this.after(this.record, this.behind.what);
  }

  private onDisk(data: JournalData): JournalData {
    this.notedOffset = stableOffset(this.notedOffset, this.wallOffset());
    return toWall(data, this.notedOffset, this.deps.bootId);
  }

  private caughtUp(): void {
    if (this.behind === null) return;
    this.deps.log.info({ what: this.behind.what, attempts: this.behind.attempts }, 'the journal caught up');
    this.behind = null;
  }
}
