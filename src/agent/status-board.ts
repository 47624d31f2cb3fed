// The status as the agent tells it: the report of the last finished pass (never one
// read in between, which would say Converged beside a route out of sync), the phase
// change logged once, and the listeners told after each pass. The report itself is
// built by the pure model (src/status/model.ts).
import type { Logger } from 'pino';
import type { Summary } from '../core/decide.js';
import type { Reason } from '../core/reasons.js';
import type { StatusReport } from '../status/report.js';

/** Builds the report for a summary and the wall time of the last pass (null: none yet). */
export type BuildReport = (summary: Summary, lastReconcile: number | null) => StatusReport;

export class StatusBoard {
  private said: Summary;
  private published: StatusReport | undefined;
  private lastReconcile: number | null = null;
  private readonly listeners: Array<(s: StatusReport, changed: boolean) => void> = [];

  constructor(
    private readonly log: Logger,
    starting: Reason,
  ) {
    this.said = { phase: 'Waiting', reasons: [starting] };
  }

  /** What was said last (before the first pass: Waiting, starting). */
  get summary(): Summary {
    return this.said;
  }

  /** The first pass has ended. */
  get ready(): boolean {
    return this.published !== undefined;
  }

  /** After a pass that ended at wall time `at`: logs a phase change, keeps the report, tells the listeners. */
  publish(next: Summary, at: number, build: BuildReport): void {
    if (this.published === undefined) this.log.info('first reconcile done');
    const text = (s: Summary) => s.reasons.map((r) => r.message).join('\n');
    const changed = next.phase !== this.said.phase || text(next) !== text(this.said);
    if (changed) {
      const level = next.phase === 'Degraded' ? 'warn' : 'info';
      this.log[level](
        {
          from: this.said.phase,
          to: next.phase,
          reasons: next.reasons.map((r) => r.message),
          codes: next.reasons.map((r) => r.code),
        },
        `phase ${next.phase}`,
      );
    }
    this.said = next;
    this.lastReconcile = at;
    const report = build(next, at);
    this.published = report;
    for (const l of this.listeners) l(report, changed);
  }

  /** The report of the last finished pass; before the first, one built now. */
  current(build: BuildReport): StatusReport {
    return this.published ?? build(this.said, this.lastReconcile);
  }

  onStatus(listener: (s: StatusReport, changed: boolean) => void): void {
    this.listeners.push(listener);
  }
}
