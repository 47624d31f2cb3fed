// The agent's Prometheus metrics (prom-client's only importer): gauges follow every pass's status
// report, counters and the histogram the recorder hooks. Label values are closed sets, started at
// zero so that `rate()` and alerts see a series before its first event, or errno names,
// ERR_GWMODE_* codes and the configured service CIDRs: never a pid, id, path or message.
import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';
import type { AgentRecorder, ReplaceRecord, RestartRecord } from '../core/recorder.js';
import { REASON_CODES } from '../core/reasons.js';
import type { GatewayMode } from '../core/types.js';
import type { StatusReport } from '../status/report.js';

// prom-client's parts, not its index, which also loads its push gateway, cluster aggregation and
// the OpenTelemetry API (4 to 8 MB of RSS); its default metrics one by one, without eventLoopLag,
// a 10 ms timer from start to exit (100 wake-ups a second at rest).
const require = createRequire(import.meta.url);
const Registry = require('prom-client/lib/registry') as typeof Prom.Registry;
const Counter = require('prom-client/lib/counter') as typeof Prom.Counter;
const Gauge = require('prom-client/lib/gauge') as typeof Prom.Gauge;
const Histogram = require('prom-client/lib/histogram') as typeof Prom.Histogram;
type DefaultMetric = (registry: Prom.Registry, config: { eventLoopMonitoringPrecision: number }) => void;
const DEFAULT_METRICS = [
  ...['processStartTime', 'osMemoryHeap', 'processOpenFileDescriptors', 'processMaxFileDescriptors'],
  ...(typeof process.getActiveResourcesInfo === 'function' ? ['processResources'] : []),
  ...['processHandles', 'processRequests', 'heapSizeAndUsed', 'heapSpacesSizeAndUsed', 'version', 'gc'],
];

/** prom-client's collectDefaultMetrics, its CPU counters without exemplars. */
function collectDefaultMetrics(registry: Prom.Registry): void {
  let last = process.cpuUsage();
  const counter = (name: string, help: string, collect?: () => void) =>
    new Counter({ name, help, registers: [registry], ...(collect ? { collect } : {}) });
  const user = counter('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', () => {
    const now = process.cpuUsage();
    user.inc((now.user - last.user) / 1e6);
    system.inc((now.system - last.system) / 1e6);
    total.inc((now.user - last.user + now.system - last.system) / 1e6);
    last = now;
  });
  const system = counter('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.');
  const total = counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.');
  for (const name of DEFAULT_METRICS)
    (require(`prom-client/lib/metrics/${name}`) as DefaultMetric)(registry, { eventLoopMonitoringPrecision: 10 });
}

const PREFIX = 'ovn_gwmode_';
const PHASES = ['Converged', 'Waiting', 'Progressing', 'Degraded'] as const;
const MODES = ['local', 'shared'] as const;
const MODES_OR_NONE = [...MODES, 'none'];
const REPLACE_RESULTS = ['done', 'failed', 'put_back', 'put_back_failed'] as const;
const RESTART_RESULTS = ['stopped', 'failed', 'completed'] as const;
export const CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** A pass takes well under a millisecond on a quiet node, seconds when the kernel or a runtime is slow. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

interface MetricsOptions {
  version: string;
  strategy: string;
  /** The default process and Node.js metrics (off in unit tests that count series). */
  processMetrics?: boolean;
}

const direction = (mode: GatewayMode | null): string => (mode === null ? 'none' : `to_${mode}`);

/** One series per value, 1 where `on` says so. */
function flags(g: Prom.Gauge, label: string, values: readonly string[], on = (_v: string) => false): void {
  for (const v of values) g.set({ [label]: v }, on(v) ? 1 : 0);
}

/** Each metric's help text (docs/metrics.md has the table), by name without the prefix. */
const HELP = {
  desired_mode:
    'The desired gateway mode (1 for the mode the mode file says; none before the first valid read; all 0 before the first pass ends).',
  ovnkube_mode:
    'The gateway mode ovnkube-node runs, as seen in /proc (none when unknown; all 0 before the first pass ends).',
  phase: 'The phase of the node (1 for the current phase; all 0 before the first pass ends).',
  status_reason: 'Whether a reason code is among the current reasons (reasonCodes of GET /status).',
  route_in_sync: 'Whether the service CIDR route is what the desired mode needs.',
  route_repairs_suspended:
    'Whether repairs of the service CIDR are suspended (something keeps setting the route back).',
  ovnkube_restart_pending: 'Whether a migration to the desired mode still owes its ovnkube-node restart.',
  mode_file_invalid: 'Whether the mode file is currently unreadable or invalid (the last valid mode, if any, is kept).',
  last_reconcile_timestamp_seconds: 'When the last pass of the reconcile loop ended (Unix time).',
  build_info: 'Always 1; the labels say what runs.',
  route_replaces_total:
    'Service route replaces, by migration direction and result (put_back: undone after another replace of the pass failed).',
  route_replace_errors_total: 'Route replaces (or put-backs) the kernel refused or did not answer, by error code.',
  reconcile_errors_total: 'Passes of the reconcile loop that failed, by error code.',
  reconcile_failures_total:
    'Failed passes, whatever the cause (counted from zero; reconcile_errors_total says which error).',
  ovnkube_restarts_total:
    'ovnkube-node restarts, by strategy and result (stopped: the stop was done; completed: a new ovnkube-node runs the mode; failed: the request failed).',
  netlink_lost_resyncs_total: 'Full resyncs because the kernel dropped route or link notifications.',
  mode_file_errors_total: 'Times the mode file turned invalid or unreadable (each distinct error once).',
  desired_mode_changes_total: 'Changes of the desired mode read from the mode file.',
  reconcile_duration_seconds: 'Duration of a pass of the reconcile loop (observe, plan, act, verify).',
};

type MetricKind<M> = new (config: Prom.MetricConfiguration<string>) => M;

export class AgentMetrics implements AgentRecorder {
  readonly registry = new Registry();
  private readonly g = {
    desired: this.metric(Gauge, 'desired_mode', 'mode'),
    ovnkube: this.metric(Gauge, 'ovnkube_mode', 'mode'),
    phase: this.metric(Gauge, 'phase', 'phase'),
    reason: this.metric(Gauge, 'status_reason', 'code'),
    inSync: this.metric(Gauge, 'route_in_sync', 'cidr', 'family'),
    suspended: this.metric(Gauge, 'route_repairs_suspended', 'cidr'),
    pending: this.metric(Gauge, 'ovnkube_restart_pending'),
    modeFileInvalid: this.metric(Gauge, 'mode_file_invalid'),
    lastReconcile: this.metric(Gauge, 'last_reconcile_timestamp_seconds'),
    build: this.metric(Gauge, 'build_info', 'version', 'nodejs_version', 'restart_strategy'),
  };
  private readonly c = {
    replaces: this.metric(Counter, 'route_replaces_total', 'direction', 'result'),
    kernelErrors: this.metric(Counter, 'route_replace_errors_total', 'code'),
    reconcileErrors: this.metric(Counter, 'reconcile_errors_total', 'code'),
    reconcileFailures: this.metric(Counter, 'reconcile_failures_total'),
    restarts: this.metric(Counter, 'ovnkube_restarts_total', 'strategy', 'result'),
    lost: this.metric(Counter, 'netlink_lost_resyncs_total'),
    modeFileErrors: this.metric(Counter, 'mode_file_errors_total'),
    modeChanges: this.metric(Counter, 'desired_mode_changes_total'),
  };
  private readonly duration = new Histogram({
    name: `${PREFIX}reconcile_duration_seconds`,
    help: HELP.reconcile_duration_seconds,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  constructor(readonly options: MetricsOptions) {
    if (options.processMetrics !== false) {
      collectDefaultMetrics(this.registry);
      // Gauges named like counters: promtool (rightly) refuses them, and each has a twin
      // without the suffix (nodejs_active_handles, ...) that stays.
      for (const name of ['handles', 'requests', 'resources'])
        this.registry.removeSingleMetric(`nodejs_active_${name}_total`);
    }
    const { version, strategy } = options;
    this.g.build.set({ version, nodejs_version: process.versions.node, restart_strategy: strategy }, 1);
    for (const mode of MODES)
      for (const result of REPLACE_RESULTS) this.c.replaces.inc({ direction: direction(mode), result }, 0);
    for (const result of RESTART_RESULTS) this.c.restarts.inc({ strategy, result }, 0);
    for (const c of [this.c.lost, this.c.reconcileFailures, this.c.modeFileErrors, this.c.modeChanges]) c.inc(0);
    // No phase and no mode until the first status report (the first pass's): all at zero.
    flags(this.g.desired, 'mode', MODES_OR_NONE);
    flags(this.g.ovnkube, 'mode', MODES_OR_NONE);
    flags(this.g.phase, 'phase', PHASES);
    flags(this.g.reason, 'code', REASON_CODES);
    for (const g of [this.g.pending, this.g.modeFileInvalid]) g.set(0);
  }

  private metric<M>(Kind: MetricKind<M>, name: keyof typeof HELP, ...labelNames: string[]): M {
    return new Kind({ name: PREFIX + name, help: HELP[name], labelNames, registers: [this.registry] });
  }

  onStatus(s: StatusReport): void {
    const { g } = this;
    flags(g.desired, 'mode', MODES_OR_NONE, (m) => m === (s.desiredMode ?? 'none'));
    flags(g.ovnkube, 'mode', MODES_OR_NONE, (m) => m === (s.ovnkubeMode ?? 'none'));
    flags(g.phase, 'phase', PHASES, (p) => p === s.phase);
    flags(g.reason, 'code', REASON_CODES, (c) => s.reasonCodes.some((x) => x === c));
    // The CIDRs change only with a reload; stale ones must not linger.
    g.inSync.reset();
    g.suspended.reset();
    for (const r of s.routes) {
      g.inSync.set({ cidr: r.cidr, family: `ipv${r.family}` }, r.inSync ? 1 : 0);
      g.suspended.set({ cidr: r.cidr }, r.repairsSuspended === null ? 0 : 1);
    }
    g.pending.set(s.restart?.required ? 1 : 0);
    g.modeFileInvalid.set(s.modeSource.error === null ? 0 : 1);
    if (s.lastReconcile !== null) g.lastReconcile.set(Date.parse(s.lastReconcile) / 1000);
  }

  replace(r: ReplaceRecord): void {
    this.c.replaces.inc({ direction: direction(r.mode), result: r.result });
    if (r.code !== null) this.c.kernelErrors.inc({ code: r.code });
  }

  restart(r: RestartRecord): void {
    this.c.restarts.inc({ strategy: r.strategy, result: r.result });
  }

  readonly desiredModeChanged = (_from: GatewayMode | null, _to: GatewayMode) => this.c.modeChanges.inc();
  readonly modeFileError = (_path: string) => this.c.modeFileErrors.inc();
  readonly notificationsLost = () => this.c.lost.inc();

  reconciled(startedAt: number, endedAt: number, errorCode: string | null): void {
    this.duration.observe(Math.max(0, endedAt - startedAt) / 1000);
    if (errorCode === null) return;
    this.c.reconcileFailures.inc();
    this.c.reconcileErrors.inc({ code: errorCode });
  }

  readonly expose = (): Promise<string> => this.registry.metrics();
}
