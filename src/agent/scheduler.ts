// When the owner loop runs a pass (it knows wake-ups and timers, never routes or modes). Passes never
// overlap: a wake-up during one marks the loop dirty, and one more pass runs after it. Wake-ups are
// coalesced into the next turn of the event loop (setImmediate), so one pass takes every event
// already read; what they ask (read the mode file, scan /proc in full) is kept as two flags until a
// pass takes them. Retries: docs/design.md, "Backoff".
import type { Logger } from 'pino';
import { after, every, type Clock } from '../clock.js';
import { backoffMs } from '../core/decide.js';

export interface PassEnd {
  /** The decision's own wake-up, in ms. */
  wakeInMs?: number;
  /** Run another pass right after this one. */
  again?: boolean;
}

export interface SchedulerDeps {
  log: Logger;
  clock: Clock;
  random: () => number;
  /** One pass; failures are reported through failed(), a throw is a bug. */
  pass: () => Promise<PassEnd>;
}

type TimerName = 'resync' | 'retry' | 'wake' | 'mode';

export class Scheduler {
  /** A pass is under way. */
  busy = false;
  /** When the pass under way started, or the last one ended its work (before its status was published). */
  lastProgressAt = 0;
  private dirty = false;
  private stopped = false;
  private kickTimer: NodeJS.Immediate | undefined;
  private timers = new Map<TimerName, NodeJS.Timeout>();
  /** A failed pass's retry is set: the full pass a periodic resync would ask for. */
  private retryPending = false;
  private failures = 0;
  private modeStale = true;
  private probeStale = true;
  private idle: Promise<void> = Promise.resolve();
  private passes = 0;
  private counting = false;
  private waiters: Array<() => void> = [];

  constructor(private readonly deps: SchedulerDeps) {}

  /** (Re)starts the periodic resync, first tick ms from now. */
  resyncEvery(ms: number): void {
    this.clear('resync');
    const tick = () => !this.retryPending && this.kick('periodic resync');
    this.timers.set('resync', every(ms, tick));
  }

  /** Asks for a pass; one woken by netlink events alone skips the mode file, by route events alone the /proc scan. */
  kick(why: string, readMode = true, routeEvent = false): void {
    if (this.stopped) return;
    if (readMode) this.modeStale = true;
    if (!routeEvent) this.probeStale = true;
    if (this.busy) {
      this.dirty = true;
      return;
    }
    if (this.kickTimer) return;
    this.deps.log.debug({ why }, 'wake-up');
    this.kickTimer = setImmediate(() => {
      this.kickTimer = undefined;
      this.idle = this.loop();
    });
  }

  /** What the wake-ups since the last pass asked of the one starting now. */
  take(): { readMode: boolean; fullScan: boolean } {
    const asked = { readMode: this.modeStale, fullScan: this.probeStale };
    this.modeStale = this.probeStale = false;
    return asked;
  }

  /** The mode file is being written: look again then. */
  modeSettlingIn(ms: number): void {
    this.set('mode', ms, 'mode file settling');
  }

  /** The pass failed: counts the attempt and sets its retry; 0 ms: the next pass runs at once. */
  failed(code: string | undefined): { attempt: number; delayMs: number } {
    this.failures++;
    const delayMs =
      code === 'ENOENT' && this.failures === 1 ? 0 : backoffMs(this.failures, 1000, 60_000, this.deps.random());
    this.clear('retry');
    this.retryPending = delayMs > 0 && !this.stopped;
    if (delayMs === 0) this.dirty = this.probeStale = true;
    else this.set('retry', delayMs, 'retry');
    return { attempt: this.failures, delayMs };
  }

  /** A retry still set (another wake-up came first) has nothing left to retry. */
  succeeded(): void {
    this.failures = 0;
    this.clear('retry');
    this.retryPending = false;
  }

  /** Something the pass did (a journal save) is to be tried again, with backoff by its own attempts. */
  retryLater(attempt: number, why: string): number {
    const delayMs = backoffMs(attempt, 1000, 60_000, this.deps.random());
    this.set('retry', delayMs, why);
    return delayMs;
  }

  settle(): Promise<void> {
    // A pass under way that has not yet counted itself started before this call.
    const target = this.passes + (this.counting ? 2 : 1);
    this.kick('settle');
    return new Promise((resolve) => {
      const check = () => (this.passes >= target || this.stopped ? resolve() : this.waiters.push(check));
      check();
    });
  }

  /** Stops every timer and wake-up; resolves when the pass under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const name of [...this.timers.keys()]) this.clear(name);
    if (this.kickTimer) clearImmediate(this.kickTimer);
    await this.idle;
  }

  progressed(): number {
    return (this.lastProgressAt = this.deps.clock.now());
  }

  private set(name: Exclude<TimerName, 'resync'>, ms: number, why: string): void {
    this.clear(name);
    if (this.stopped) return;
    this.timers.set(
      name,
      after(ms, () => {
        if (name === 'retry') this.retryPending = false;
        this.kick(why);
      }),
    );
  }

  /** Node's clearTimeout clears an interval too. */
  private clear(name: TimerName): void {
    clearTimeout(this.timers.get(name));
    this.timers.delete(name);
  }

  private async loop(): Promise<void> {
    this.busy = true;
    try {
      do {
        this.dirty = false;
        await this.once();
      } while (this.dirty && !this.stopped);
    } finally {
      this.busy = false;
    }
  }

  private async once(): Promise<void> {
    this.counting = true;
    this.lastProgressAt = this.deps.clock.now();
    const end = await this.deps.pass();
    if (end.again) this.dirty = true;
    if (end.wakeInMs === undefined) this.clear('wake');
    else this.set('wake', end.wakeInMs, 'decision wake-up');
    this.passes++;
    this.counting = false;
    for (const w of this.waiters.splice(0)) w();
  }
}
