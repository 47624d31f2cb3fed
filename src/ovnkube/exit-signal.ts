// A prompt signal that ovnkube-node changed, so that the agent acts within a few tens of
// milliseconds of a rollout instead of at its next look (once a second while it waits).
// The /proc scan stays the truth: this only wakes the loop, which scans and decides.
//
//  1. After each pass the agent says which ovnkube-node process it saw (follow(pid)). That
//     process is watched through a pidfd (native/src/pidfd.c): its exit wakes the loop at
//     once, whoever its parent is (hostPID), and a reused PID is never taken for it.
//  2. An exit starts a quick look for the successor: a wake-up every QUICK_MS for
//     QUICK_FOR_MS, then every SLOW_MS up to LOOK_FOR_MS (a DaemonSet rollout creates a new
//     pod, which takes seconds). A pass that sees a new ovnkube-node (another pid) ends it
//     and watches that one.
//  3. Why not the kernel's process-event connector (PROC_EVENT_EXEC): it lives in the initial
//     network namespace only, so the tests (an agent in a namespace) could not prove it, and it
//     delivers every exec on the node to filter. A pidfd costs one fd and no event but the one.
//  4. Nothing here is fatal: a pidfd that cannot be opened (ESRCH: gone already) counts as an
//     exit. ENOSYS (a kernel before 5.3, or a seccomp profile) and EPERM (a seccomp profile)
//     will not pass: the agent keeps to its periodic look, said once. Any other error (EMFILE,
//     ENOMEM) is tried again at the next pass's follow(), warned once until a watch works.
//  5. A pass may still see the process that exited (its exit is noticed before /proc drops
//     it): following it again neither ends the look for its successor nor watches it anew.
import type { Logger } from 'pino';
import { addon } from '../native/addon.js';

export const QUICK_MS = 20;
export const QUICK_FOR_MS = 2000;
export const SLOW_MS = 100;
export const LOOK_FOR_MS = 30_000;

export interface ExitWatcher {
  /** Calls onExit once when the process has exited; throws (code ESRCH) when it is gone already. */
  watch(pid: number, onExit: () => void): { close(): void };
}

const pidfd: ExitWatcher = {
  watch(pid, onExit) {
    const handle = addon.pidfdWatch(pid, onExit);
    return { close: () => addon.pidfdClose(handle) };
  },
};

export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(t: unknown): void;
}

const realTimers: Timers = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (t) => clearTimeout(t as NodeJS.Timeout),
};

export class OvnkubeExitSignal {
  private pid: number | null = null;
  private watch: { close(): void } | undefined;
  private lookTimer: unknown;
  private lookStarted: number | null = null;
  /** The pid that exited, which the quick look is for (rule 5). */
  private gone: number | null = null;
  /** Rule 4: no pidfd to be had here. */
  private broken = false;
  /** Rule 4: a warning given for a failure that a later watch may get past. */
  private warned = false;
  private closed = false;

  constructor(
    private readonly wake: (why: string) => void,
    private readonly log: Pick<Logger, 'warn' | 'debug'>,
    private readonly watcher: ExitWatcher = pidfd,
    private readonly timers: Timers = realTimers,
  ) {}

  /** After a pass: the ovnkube-node process it saw, or null (none, or not one). */
  follow(pid: number | null): void {
    if (this.closed || pid === this.pid || (pid !== null && pid === this.gone)) return;
    if (pid !== null) this.stopLook();
    this.watch?.close();
    this.watch = undefined;
    this.pid = pid;
    if (pid === null || this.broken) return;
    try {
      this.watch = this.watcher.watch(pid, () => this.exited(pid));
      this.warned = false;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ESRCH') {
        this.exited(pid);
        return;
      }
      const lasting = code === 'ENOSYS' || code === 'EPERM';
      if (lasting) this.broken = true;
      // Not watched: the next pass's follow() of the same pid tries again (rule 4).
      else this.pid = null;
      if (lasting || !this.warned) {
        this.log.warn(
          { err },
          `cannot watch ovnkube-node through a pidfd${lasting ? '' : ' (tried again after the next pass)'}: a restart is noticed at the next look at /proc`,
        );
      }
      this.warned = !lasting;
    }
  }

  close(): void {
    this.closed = true;
    this.watch?.close();
    this.watch = undefined;
    this.stopLook();
  }

  private exited(pid: number): void {
    if (this.closed || pid !== this.pid) return;
    this.watch = undefined;
    this.log.debug({ pid }, 'ovnkube-node exited: looking for its successor');
    this.stopLook();
    this.gone = pid;
    this.lookStarted = this.timers.now();
    this.wake('ovnkube-node exited');
    this.schedule();
  }

  private schedule(): void {
    const elapsed = this.timers.now() - this.lookStarted!;
    if (elapsed >= LOOK_FOR_MS) {
      this.stopLook();
      return;
    }
    this.lookTimer = this.timers.setTimeout(
      () => {
        this.wake('looking for the successor of ovnkube-node');
        this.schedule();
      },
      elapsed < QUICK_FOR_MS ? QUICK_MS : SLOW_MS,
    );
  }

  private stopLook(): void {
    if (this.lookTimer !== undefined) this.timers.clearTimeout(this.lookTimer);
    this.lookTimer = undefined;
    this.lookStarted = null;
    this.gone = null;
  }
}
