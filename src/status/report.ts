// One status report, rendered many ways: the socket's JSON, `status` for a person,
// `status --brief` (also systemd's STATUS= line), and the CLI's exit code.
import type { Release } from '../core/platform.js';
import type { ReasonCode } from '../core/reasons.js';
import { renderNextHop, type NextHop } from '../core/route.js';
import type { GatewayMode, Layout, Phase, RouteStatus } from '../core/types.js';

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

export const shapeOf = (n: NextHop): RouteShape => ({ dev: n.dev, via: n.gateway, mtu: n.mtu });
const render = (r: RouteShape) => renderNextHop({ dev: r.dev, gateway: r.via, mtu: r.mtu, oif: null });

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
  layout: Layout;
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

/**
 * The reasons that say the operator's input is bad. The brief line shows them whatever
 * reason comes first, or a garbled mode file would hide behind "service routes match
 * desired mode local" (or a restart under way) while the agent acts on an older mode:
 *  - ModeFileInvalid: the mode file turned bad; the last valid mode is kept;
 *  - ModeNotRead: no valid mode read yet (missing, unreadable or invalid); nothing is done.
 * A bad flag, variable or ovnkube.conf is no reason: the agent refuses to start (exit 2).
 */
export const INPUT_ERROR_CODES: readonly ReasonCode[] = ['ModeFileInvalid', 'ModeNotRead'];

export function renderBrief(s: StatusReport): string {
  const synced = s.routes.filter((r) => r.inSync).length;
  const shown = s.reasons.filter((_, i) => i === 0 || INPUT_ERROR_CODES.some((c) => c === s.reasonCodes[i]));
  const said = shown.length > 0 ? `: ${shown.join('; ')}` : '';
  return `${s.phase} desired=${s.desiredMode ?? 'none'} ovnkube=${s.ovnkubeMode ?? 'unknown'} layout=${s.layout} release=${s.platform.release} routes=${synced}/${s.routes.length} in sync${s.dryRun ? ' (dry run)' : ''}${said}`;
}

export function renderHuman(s: StatusReport): string {
  const row = (label: string, value: string) => `${`${label}:`.padEnd(16)}${value}`;
  const lines = [
    row('phase', `${s.phase}${s.dryRun ? ' (dry run)' : ''}`),
    row(
      'desired mode',
      `${s.desiredMode ?? 'none'} (from ${s.modeSource.path}${s.modeSource.detail ? `: ${s.modeSource.detail}` : ''}${s.modeSource.error ? `; error: ${s.modeSource.error}` : ''})`,
    ),
    row('ovnkube-node', s.ovnkubeMode ?? 'unknown'),
    row('layout', s.layout),
    row('release', `${s.platform.release} (${s.platform.evidence})`),
    row('last reconcile', s.lastReconcile ?? 'never'),
  ];
  if (s.lastError) lines.push(row('last error', s.lastError));
  if (s.restart && (s.restart.strategy !== 'none' || s.restart.required)) {
    const last = s.restart.last;
    const lastText = last
      ? `; last ${last.at} ${last.target}: ${last.result}${last.error ? ` (${last.error})` : ''}`
      : '';
    lines.push(
      row(
        'restart',
        `${s.restart.strategy}${s.restart.required ? ', required' : ''}; ${s.restart.count} so far${lastText}`,
      ),
    );
  }
  lines.push('routes:');
  for (const r of s.routes) {
    const observed = r.multipath ? 'multipath (several next hops)' : r.observed ? render(r.observed) : 'none';
    const expected = r.expected ? render(r.expected) : 'n/a';
    const suspended = r.repairsSuspended ? ` [repairs suspended]` : '';
    lines.push(
      `  ${r.inSync ? 'ok ' : 'NO '} ${r.cidr}: ${observed}${r.inSync ? '' : ` (expected ${expected})`}${suspended}`,
    );
  }
  if (s.reasons.length) lines.push('reasons:', ...s.reasons.map((x) => `  - ${x}`));
  if (s.warnings.length) lines.push('warnings:', ...s.warnings.map((x) => `  - ${x}`));
  lines.push(row('version', s.version));
  return lines.join('\n');
}

export const exitCodeOf = (s: StatusReport): number => (s.phase === 'Converged' ? 0 : 1);
