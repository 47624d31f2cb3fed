// What systemd is told by sd_notify, and when (docs/install.md): READY=1, STATUS= on change,
// WATCHDOG=1 every WATCHDOG_USEC/2 but only while the owner loop makes progress (a pass stuck for
// longer withholds it, so systemd restarts a wedged agent), STOPPING=1, RELOADING=1 on SIGHUP.
// A failed notification is logged, never fatal: the agent's job is the routes.
import type { Logger } from 'pino';
import { every, type Clock } from '../clock.js';
import { addon } from '../native/addon.js';
import { renderBrief, type StatusReport } from '../status/report.js';

export type NotifyFields = Partial<
  Record<'READY' | 'STATUS' | 'WATCHDOG' | 'STOPPING' | 'RELOADING' | 'MONOTONIC_USEC', string>
>;

export interface Notifier {
  readonly enabled: boolean;
  /** Sends one datagram; throws errors with errno and code. */
  notify(fields: NotifyFields): void;
}

// A STATUS= line may not hold a newline: it would start another assignment.
export const formatNotify = (fields: NotifyFields): string =>
  Object.entries(fields)
    .map(([k, v]) => `${k}=${String(v).replace(/\n/g, ' ')}`)
    .join('\n');

export function systemdNotifier(env: NodeJS.ProcessEnv = process.env): Notifier {
  const socket = env.NOTIFY_SOCKET;
  return { enabled: Boolean(socket), notify: (fields) => socket && addon.sdNotify(socket, formatNotify(fields)) };
}

/** The watchdog period from WATCHDOG_USEC; undefined when unset or WATCHDOG_PID names another process. */
export function watchdogUsec(env: NodeJS.ProcessEnv = process.env, pid = process.pid): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isInteger(usec) || usec <= 0 || (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid)) return undefined;
  return usec;
}

export interface Supervised {
  isReady(): boolean;
  isBusy(): boolean;
  /** Monotonic time (Clock.now) of the last start or end of a pass: a wall-clock step is no stuck loop. */
  lastProgressAt(): number;
  status(): StatusReport;
}

export class Supervisor {
  private timer: NodeJS.Timeout | undefined;
  private readySent = false;
  private stuckReported = false;
  private lastStatus = '';

  constructor(
    private readonly notifier: Notifier,
    private readonly log: Logger,
    private readonly watchdogUsec: number | undefined,
    private readonly clock: Clock,
  ) {}

  /** The stuck threshold shared with /healthz. */
  stuckAfterMs(): number {
    return this.watchdogUsec ? this.watchdogUsec / 1000 : 120_000;
  }

  isStuck(agent: Supervised, now = this.clock.now()): boolean {
    return agent.isBusy() && now - agent.lastProgressAt() > this.stuckAfterMs();
  }

  private send(fields: NotifyFields): void {
    try {
      this.notifier.notify(fields);
    } catch (err) {
      this.log.warn({ err, fields: Object.keys(fields) }, 'sd_notify failed');
    }
  }

  start(agent: Supervised): void {
    if (!this.watchdogUsec) return;
    const periodMs = Math.max(1, Math.floor(this.watchdogUsec / 2000));
    this.timer = every(periodMs, () => {
      if (!this.isStuck(agent)) {
        this.stuckReported = false;
        this.send({ WATCHDOG: '1' });
        return;
      }
      const stuckFor = Math.round((this.clock.now() - agent.lastProgressAt()) / 1000);
      if (!this.stuckReported)
        this.log.error({ stuckForSeconds: stuckFor }, 'reconcile loop stuck: withholding the watchdog ping');
      this.stuckReported = true;
      this.send({ STATUS: `Degraded: reconcile loop stuck for ${stuckFor}s; withholding the watchdog` });
    });
  }

  /** Called after every pass (and after a reload). */
  onStatus(status: StatusReport, ready: boolean): void {
    const line = renderBrief(status);
    const becameReady = ready && !this.readySent;
    if (!becameReady && line === this.lastStatus) return;
    this.readySent ||= becameReady;
    this.lastStatus = line;
    this.send(becameReady ? { READY: '1', STATUS: line } : { STATUS: line });
  }

  reloading(): void {
    this.readySent = false;
    // CLOCK_MONOTONIC, which libuv's hrtime reads too.
    const now = (process.hrtime.bigint() / 1000n).toString();
    this.send({ RELOADING: '1', MONOTONIC_USEC: now, STATUS: 'reloading configuration' });
  }

  stopping(): void {
    clearInterval(this.timer);
    this.send({ STOPPING: '1', STATUS: 'stopping' });
  }
}
