// What systemd is told, and when:
//  - READY=1 once the socket listens and the first full reconcile has ended (and
//    again after a reload);
//  - STATUS=<brief status> whenever that line changes (not only the phase: a
//    Progressing agent's reason moves on, and `systemctl status` must follow it);
//  - WATCHDOG=1 every WATCHDOG_USEC/2, but only while the owner loop makes progress:
//    a pass stuck for longer than WATCHDOG_USEC withholds the ping, so systemd kills
//    and restarts a wedged agent (a blocked event loop withholds it by itself);
//  - STOPPING=1 on SIGTERM/SIGINT; RELOADING=1 with MONOTONIC_USEC on SIGHUP.
// A failed notification is logged, never fatal: the agent's job is the routes.
import type { Logger } from 'pino';
import { every, type Clock } from '../clock.js';
import type { StatusReport } from '../status/report.js';
import { renderBrief } from '../status/report.js';
import { monotonicUsec, type Notifier, type NotifyFields } from './notify.js';

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
    if (ready && !this.readySent) {
      this.readySent = true;
      this.lastStatus = line;
      this.send({ READY: '1', STATUS: line });
      return;
    }
    if (line !== this.lastStatus) {
      this.lastStatus = line;
      this.send({ STATUS: line });
    }
  }

  reloading(): void {
    this.readySent = false;
    this.send({ RELOADING: '1', MONOTONIC_USEC: monotonicUsec(), STATUS: 'reloading configuration' });
  }

  stopping(): void {
    clearInterval(this.timer);
    this.send({ STOPPING: '1', STATUS: 'stopping' });
  }
}
