// One status report, a pure function of what the owner loop knows at the end of a pass (time
// passed in: the same inputs give the same report), rendered many ways: the socket's JSON,
// `status` for a person, `status --brief` (also systemd's STATUS= line) and the CLI's exit code.
import { summarize, type RestartView, type Summary } from '../core/decide.js';
import { restartOwed, type Migration } from '../core/migration.js';
import type { Release } from '../core/platform.js';
import type { Reason, ReasonCode } from '../core/reasons.js';
import { renderNextHop, type NextHop } from '../core/route.js';
import type { DesiredMode, GatewayMode, Observation, Phase, Plan, PlannerConfig, RouteStatus } from '../core/types.js';
import { VERSION } from '../version.js';

/** A route as the API shows it: `via` is the gateway (the JSON field names are kept stable). */
export interface RouteShape {
  dev: string | null;
  via: string | null;
  mtu: number | null;
}

export interface RouteReport {
  cidr: string;
  family: RouteStatus['family'];
  observed: RouteShape | null;
  /** Present, and true, when the CIDR's one route has several next hops. */
  multipath?: true;
  expected: RouteShape | null;
  inSync: boolean;
  repairsSuspended: string | null;
}

export interface RestartStatus {
  strategy: string;
  /** A migration to the desired mode still owes its ovnkube-node restart. */
  required: boolean;
  migration: {
    mode: GatewayMode;
    startedAt: string;
    restart: 'owed' | 'requested' | 'failed' | 'done' | 'none';
    attempts: number;
  } | null;
  last: { at: string; target: string; result: string; error: string | null } | null;
  /** Restart requests on record. */
  count: number;
}

export interface StatusReport {
  desiredMode: GatewayMode | null;
  /** detail: why the mode is what it is, where that is not the text at face value (`"local\n" is not exactly "local": shared, ...`). */
  modeSource: { path: string; error: string | null; detail: string | null };
  ovnkubeMode: GatewayMode | null;
  layout: Plan['layout'];
  /** The node's OpenShift release, and the evidence that decided it (or what was looked at). */
  platform: { release: Release; evidence: string };
  phase: Phase;
  reasons: string[];
  /** The stable code of each reason, in the same order. */
  reasonCodes: ReasonCode[];
  routes: RouteReport[];
  restart?: RestartStatus;
  dryRun: boolean;
  lastReconcile: string | null;
  lastError: string | null;
  warnings: string[];
  version: string;
}

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

const shapeOf = (n: NextHop): RouteShape => ({ dev: n.dev, via: n.gateway, mtu: n.mtu });
const render = (r: RouteShape) => renderNextHop({ dev: r.dev, gateway: r.via, mtu: r.mtu, oif: null });

function restartStatus(i: StatusInput): RestartStatus {
  const m = i.migration;
  const iso = (t: number) => new Date(t + i.wallOffsetMs).toISOString();
  const last = m?.last;
  return {
    strategy: i.strategy,
    required: m !== null && m.mode === i.desired.mode && restartOwed(m),
    migration: m && { mode: m.mode, startedAt: iso(m.startedAt), restart: m.restart, attempts: m.attempts },
    last: last
      ? { at: iso(last.at), target: last.target.describe, result: last.result ?? 'requested', error: last.error }
      : null,
    count: i.restarts,
  };
}

export function statusReport(i: StatusInput): StatusReport {
  const p = i.outcome?.plan;
  const suspensions = i.outcome?.suspensions ?? new Map<string, string>();
  const { phase, reasons } = i.summary;
  // Before the first plan: each configured CIDR, nothing known of it.
  const unknown = { observed: null, multipath: false, expected: null, inSync: false };
  const none: RouteStatus[] = i.config.serviceCidrs.map((c) => ({ cidr: c.text, family: c.family, ...unknown }));
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

/**
 * The reasons that say the operator's input is bad, shown by the brief line whatever reason
 * comes first, or a garbled mode file would hide behind "service routes match desired mode
 * local" while the agent acts on an older mode: ModeFileInvalid (the last valid mode is kept),
 * ModeNotRead (none read yet; nothing is done). A bad flag, variable or ovnkube.conf is no
 * reason: the agent refuses to start (exit 2).
 */
const INPUT_ERROR_CODES: readonly ReasonCode[] = ['ModeFileInvalid', 'ModeNotRead'];

export function renderBrief(s: StatusReport): string {
  const synced = s.routes.filter((r) => r.inSync).length;
  const shown = s.reasons.filter((_, i) => i === 0 || INPUT_ERROR_CODES.some((c) => c === s.reasonCodes[i]));
  const said = shown.length > 0 ? `: ${shown.join('; ')}` : '';
  return `${s.phase} desired=${s.desiredMode ?? 'none'} ovnkube=${s.ovnkubeMode ?? 'unknown'} layout=${s.layout} release=${s.platform.release} routes=${synced}/${s.routes.length} in sync${s.dryRun ? ' (dry run)' : ''}${said}`;
}

export function renderHuman(s: StatusReport): string {
  const row = (label: string, value: string) => `${`${label}:`.padEnd(16)}${value}`;
  const { path, detail, error } = s.modeSource;
  const lines = [
    row('phase', `${s.phase}${s.dryRun ? ' (dry run)' : ''}`),
    row(
      'desired mode',
      `${s.desiredMode ?? 'none'} (from ${path}${detail ? `: ${detail}` : ''}${error ? `; error: ${error}` : ''})`,
    ),
    row('ovnkube-node', s.ovnkubeMode ?? 'unknown'),
    row('layout', s.layout),
    row('release', `${s.platform.release} (${s.platform.evidence})`),
    row('last reconcile', s.lastReconcile ?? 'never'),
  ];
  if (s.lastError) lines.push(row('last error', s.lastError));
  const r = s.restart;
  if (r && (r.strategy !== 'none' || r.required)) {
    const last =
      r.last && `; last ${r.last.at} ${r.last.target}: ${r.last.result}${r.last.error ? ` (${r.last.error})` : ''}`;
    lines.push(row('restart', `${r.strategy}${r.required ? ', required' : ''}; ${r.count} so far${last ?? ''}`));
  }
  lines.push('routes:');
  for (const r of s.routes) {
    const observed = r.multipath ? 'multipath (several next hops)' : r.observed ? render(r.observed) : 'none';
    const expected = r.inSync ? '' : ` (expected ${r.expected ? render(r.expected) : 'n/a'})`;
    const suspended = r.repairsSuspended ? ' [repairs suspended]' : '';
    lines.push(`  ${r.inSync ? 'ok ' : 'NO '} ${r.cidr}: ${observed}${expected}${suspended}`);
  }
  if (s.reasons.length) lines.push('reasons:', ...s.reasons.map((x) => `  - ${x}`));
  if (s.warnings.length) lines.push('warnings:', ...s.warnings.map((x) => `  - ${x}`));
  lines.push(row('version', s.version));
  return lines.join('\n');
}

export const exitCodeOf = (s: StatusReport): number => (s.phase === 'Converged' ? 0 : 1);
