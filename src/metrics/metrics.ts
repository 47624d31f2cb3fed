// The agent's Prometheus metrics (prom-client; this is its only importer), fed by the status
// report of every pass (gauges: what is true now) and the recorder hooks (counters and the
// duration histogram: what happened). Label values are closed sets (phases, modes, reason
// codes, results; error codes are errno names or ERR_GWMODE_*) or the configured service
// CIDRs: never a pid, id, path or message. Closed sets start at zero so that `rate()` and
// alerts see a series before its first event.
import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';
import type { AgentRecorder, ReplaceRecord, RestartRecord } from '../core/recorder.js';
import { REASON_CODES } from '../core/reasons.js';
import type { GatewayMode } from '../core/types.js';
import type { StatusReport } from '../status/report.js';

// prom-client's parts, not its index: the index also loads its push gateway, summaries, cluster
// aggregation and (for CPU exemplars) the OpenTelemetry API, 4 to 8 MB of RSS; its default
// metrics include eventLoopLag, a 10 ms timer from start to exit (100 wake-ups a second at
// rest). The default metrics are registered one by one; names and values are the same.
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

export class AgentMetrics implements AgentRecorder {
  readonly registry = new Registry();
  private readonly g = {
    desired: this.gauge(
      'desired_mode',
      'The desired gateway mode (1 for the mode the mode file says; none before the first valid read; all 0 before the first pass ends).',
      ['mode'],
    ),
    ovnkube: this.gauge(
      'ovnkube_mode',
      'The gateway mode ovnkube-node runs, as seen in /proc (none when unknown; all 0 before the first pass ends).',
      ['mode'],
    ),
    phase: this.gauge('phase', 'The phase of the node (1 for the current phase; all 0 before the first pass ends).', [
      'phase',
    ]),
    reason: this.gauge(
      'status_reason',
      'Whether a reason code is among the current reasons (reasonCodes of GET /status).',
      ['code'],
    ),
    inSync: this.gauge('route_in_sync', 'Whether the service CIDR route is what the desired mode needs.', [
      'cidr',
      'family',
    ]),
    suspended: this.gauge(
      'route_repairs_suspended',
      'Whether repairs of the service CIDR are suspended (something keeps setting the route back).',
      ['cidr'],
    ),
    pending: this.gauge(
      'ovnkube_restart_pending',
      'Whether a migration to the desired mode still owes its ovnkube-node restart.',
    ),
    modeFileInvalid: this.gauge(
      'mode_file_invalid',
      'Whether the mode file is currently unreadable or invalid (the last valid mode, if any, is kept).',
    ),
    lastReconcile: this.gauge(
      'last_reconcile_timestamp_seconds',
      'When the last pass of the reconcile loop ended (Unix time).',
    ),
    build: this.gauge('build_info', 'Always 1; the labels say what runs.', [
      'version',
      'nodejs_version',
      'restart_strategy',
    ]),
  };
  private readonly c = {
    replaces: this.counter(
      'route_replaces_total',
      'Service route replaces, by migration direction and result (put_back: undone after another replace of the pass failed).',
      ['direction', 'result'],
    ),
    kernelErrors: this.counter(
      'route_replace_errors_total',
      'Route replaces (or put-backs) the kernel refused or did not answer, by error code.',
      ['code'],
    ),
    reconcileErrors: this.counter(
      'reconcile_errors_total',
      'Passes of the reconcile loop that failed, by error code.',
      ['code'],
    ),
    reconcileFailures: this.counter(
      'reconcile_failures_total',
      'Failed passes, whatever the cause (counted from zero; reconcile_errors_total says which error).',
    ),
    restarts: this.counter(
      'ovnkube_restarts_total',
      'ovnkube-node restarts, by strategy and result (stopped: the stop was done; completed: a new ovnkube-node runs the mode; failed: the request failed).',
      ['strategy', 'result'],
    ),
    lost: this.counter(
      'netlink_lost_resyncs_total',
      'Full resyncs because the kernel dropped route or link notifications.',
    ),
    modeFileErrors: this.counter(
      'mode_file_errors_total',
      'Times the mode file turned invalid or unreadable (each distinct error once).',
    ),
    modeChanges: this.counter('desired_mode_changes_total', 'Changes of the desired mode read from the mode file.'),
  };
  private readonly duration = new Histogram({
    name: `${PREFIX}reconcile_duration_seconds`,
    help: 'Duration of a pass of the reconcile loop (observe, plan, act, verify).',
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
    this.g.build.set(
      { version: options.version, nodejs_version: process.versions.node, restart_strategy: options.strategy },
      1,
    );
    for (const mode of MODES)
      for (const result of REPLACE_RESULTS) this.c.replaces.inc({ direction: direction(mode), result }, 0);
    for (const result of RESTART_RESULTS) this.c.restarts.inc({ strategy: options.strategy, result }, 0);
    for (const c of [this.c.lost, this.c.reconcileFailures, this.c.modeFileErrors, this.c.modeChanges]) c.inc(0);
    // No phase and no mode until the first status report (the first pass's): all at zero.
    for (const mode of [...MODES, 'none'] as const) {
      this.g.desired.set({ mode }, 0);
      this.g.ovnkube.set({ mode }, 0);
    }
    for (const phase of PHASES) this.g.phase.set({ phase }, 0);
    for (const code of REASON_CODES) this.g.reason.set({ code }, 0);
    this.g.pending.set(0);
    this.g.modeFileInvalid.set(0);
  }

  private gauge(name: string, help: string, labelNames: string[] = []): Prom.Gauge {
    return new Gauge({ name: PREFIX + name, help, labelNames, registers: [this.registry] });
  }

  private counter(name: string, help: string, labelNames: string[] = []): Prom.Counter {
    return new Counter({ name: PREFIX + name, help, labelNames, registers: [this.registry] });
  }

  /** The gauges follow every status report. */
  onStatus(s: StatusReport): void {
    const { g } = this;
    for (const mode of [...MODES, 'none'] as const) {
      g.desired.set({ mode }, (s.desiredMode ?? 'none') === mode ? 1 : 0);
      g.ovnkube.set({ mode }, (s.ovnkubeMode ?? 'none') === mode ? 1 : 0);
    }
    for (const phase of PHASES) g.phase.set({ phase }, s.phase === phase ? 1 : 0);
    for (const code of REASON_CODES) g.reason.set({ code }, s.reasonCodes.includes(code) ? 1 : 0);
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

  desiredModeChanged(_from: GatewayMode | null, _to: GatewayMode): void {
    this.c.modeChanges.inc();
  }

  modeFileError(_path: string): void {
    this.c.modeFileErrors.inc();
  }

  notificationsLost(): void {
    this.c.lost.inc();
  }

  reconciled(startedAt: number, endedAt: number, errorCode: string | null): void {
    this.duration.observe(Math.max(0, endedAt - startedAt) / 1000);
    if (errorCode === null) return;
    this.c.reconcileFailures.inc();
    this.c.reconcileErrors.inc({ code: errorCode });
  }

  /** The exposition, in the Prometheus text format. */
  expose(): Promise<string> {
    return this.registry.metrics();
  }
}
