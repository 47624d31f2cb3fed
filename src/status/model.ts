// The status as a pure function of what the owner loop knows at the end of a pass: the
// outcome of its last round (plan, decision, observation, suspensions), the journal, the
// desired mode and the pass's error. Time goes in (the wall offset, the last pass's wall
// time): the same inputs give the same report.
import { summarize, type RestartView, type Summary } from '../core/decide.js';
import { restartOwed, type Migration } from '../core/migration.js';
import type { Reason } from '../core/reasons.js';
import type { DesiredMode, Observation, Plan, PlannerConfig } from '../core/types.js';
import { VERSION } from '../version.js';
import { shapeOf, type RestartStatus, type StatusReport } from './report.js';

/** What the last round of a pass found and decided. */
export interface Outcome {
  plan: Plan;
  restart: RestartView;
  observed: Observation;
  suspensions: ReadonlyMap<string, string>;
}

export interface StatusInput {
  outcome: Outcome | undefined;
  desired: DesiredMode;
  migration: Migration | null;
  /** Restart requests on record. */
  restarts: number;
  strategy: string;
  config: Pick<PlannerConfig, 'serviceCidrs' | 'dryRun'>;
  /** The journal's warning, the capabilities missing: shown after the plan's. */
  warnings: string[];
  error: Reason | null;
  /** The phase and reasons the report says (summaryOf, as published). */
  summary: Summary;
  /** Wall minus monotonic time (ms): how the journal's monotonic times are shown. */
  wallOffsetMs: number;
  /** Wall time (ms) of the end of the last pass; null before the first. */
  lastReconcile: number | null;
}

/**
 * The phase and reasons after a pass. Before any round has an outcome: Degraded with the
 * error, or Waiting with the reasons said so far (`before`).
 */
export function summaryOf(outcome: Outcome | undefined, error: Reason | null, before: Reason[]): Summary {
  if (outcome === undefined)
    return error ? { phase: 'Degraded', reasons: [error] } : { phase: 'Waiting', reasons: before };
  return summarize(outcome.plan, error ? { phase: null, reason: null } : outcome.restart, outcome.suspensions, error);
}

function restartStatus(i: StatusInput): RestartStatus {
  const m = i.migration;
  const owed = m !== null && m.mode === i.desired.mode && restartOwed(m);
  const iso = (t: number) => new Date(t + i.wallOffsetMs).toISOString();
  return {
    strategy: i.strategy,
    required: owed,
    migration: m && { mode: m.mode, startedAt: iso(m.startedAt), restart: m.restart, attempts: m.attempts },
    last: m?.last
      ? {
          at: iso(m.last.at),
          target: m.last.target.describe,
          result: m.last.result ?? 'requested',
          error: m.last.error,
        }
      : null,
    count: i.restarts,
  };
}

export function statusReport(i: StatusInput): StatusReport {
  const p = i.outcome?.plan;
  const suspensions = i.outcome?.suspensions ?? new Map<string, string>();
  const { phase, reasons } = i.summary;
  const none = i.config.serviceCidrs.map((c) => ({
    cidr: c.text,
    family: c.family,
    observed: null,
    multipath: false,
    expected: null,
    inSync: false,
  }));
  return {
    desiredMode: i.desired.mode,
    modeSource: { path: i.desired.source.path, error: i.desired.source.error, detail: i.desired.source.detail ?? null },
    ovnkubeMode: i.outcome?.observed.ovnkube.mode ?? null,
    layout: p?.layout ?? 'unknown',
    platform: p?.platform ?? { release: 'unknown', evidence: 'not looked at yet' },
    phase,
    reasons: reasons.map((r) => r.message),
    reasonCodes: reasons.map((r) => r.code),
    routes: (p?.routes ?? none).map((r) => ({
      cidr: r.cidr,
      family: r.family,
      observed: r.observed && shapeOf(r.observed),
      ...(r.multipath ? { multipath: true as const } : {}),
      expected: r.expected && shapeOf(r.expected),
      inSync: r.inSync,
      repairsSuspended: suspensions.get(r.cidr) ?? null,
    })),
    restart: restartStatus(i),
    dryRun: i.config.dryRun,
    lastReconcile: i.lastReconcile === null ? null : new Date(i.lastReconcile).toISOString(),
    lastError: i.error?.message ?? i.outcome?.restart.error ?? null,
    warnings: [...(p?.warnings ?? []), ...i.warnings],
    version: VERSION,
  };
}
