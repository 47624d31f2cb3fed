// The metrics as a scraper sees them, fed by hand: status reports set the gauges,
// recorder hooks move the counters; the exposition passes promtool.
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { errorCode } from '../../src/core/recorder.js';
import { parseListenAddress } from '../../src/metrics/address.js';
import { AgentMetrics } from '../../src/metrics/metrics.js';
import { MetricsListener } from '../../src/metrics/server.js';
import type { StatusReport } from '../../src/status/report.js';
import { checkMetrics, skipWithoutPromtool } from '../helpers/promtool.js';
import { within } from '../helpers/wait.js';

function report(over: Partial<StatusReport> = {}): StatusReport {
  return {
    desiredMode: 'local',
    modeSource: { path: '/etc/mode', error: null, detail: null },
    ovnkubeMode: 'local',
    layout: 'legacy',
    platform: { release: '4.8-4.9', evidence: 'os-release' },
    phase: 'Converged',
    reasons: ['service routes match desired mode local'],
    reasonCodes: ['InSync'],
    routes: [
      { cidr: '10.96.0.0/16', family: 4, observed: null, expected: null, inSync: true, repairsSuspended: null },
      {
        cidr: 'fd00:10:96::/112',
        family: 6,
        observed: null,
        expected: null,
        inSync: false,
        repairsSuspended: 'route set back 3 times',
      },
    ],
    restart: { strategy: 'cri', required: true, migration: null, last: null, count: 1 },
    dryRun: false,
    lastReconcile: '2026-12-02T11:53:31.541Z',
    lastError: null,
    warnings: [],
    version: '0.1.0',
    ...over,
  };
}

/** The value of one series of the exposition (labels exactly as written), or undefined. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('every closed label set is exported at zero before anything happened, and promtool accepts the exposition', async (t) => {
  const m = new AgentMetrics({ version: '0.1.0', strategy: 'cri' });
  const text = await m.expose();
  for (const result of ['done', 'failed', 'put_back', 'put_back_failed']) {
    assert.equal(value(text, `ovn_gwmode_route_replaces_total{direction="to_local",result="${result}"}`), 0);
    assert.equal(value(text, `ovn_gwmode_route_replaces_total{direction="to_shared",result="${result}"}`), 0);
  }
  for (const result of ['stopped', 'failed', 'completed'])
    assert.equal(value(text, `ovn_gwmode_ovnkube_restarts_total{strategy="cri",result="${result}"}`), 0);
  assert.equal(value(text, 'ovn_gwmode_netlink_lost_resyncs_total'), 0);
  assert.equal(value(text, 'ovn_gwmode_mode_file_errors_total'), 0);
  assert.equal(value(text, 'ovn_gwmode_ovnkube_restart_pending'), 0);
  // docs/metrics.md's exception: the error counters by code have no series until a code's first error;
  // the failures are counted at zero from the start by the failed passes and the replace results.
  assert.doesNotMatch(text, /^ovn_gwmode_(route_replace|reconcile)_errors_total\{/m);
  assert.equal(value(text, 'ovn_gwmode_reconcile_failures_total'), 0);
  assert.equal(value(text, 'ovn_gwmode_status_reason{code="ReconcileFailed"}'), 0);
  // No phase and no mode before the first status report: every series there, at zero.
  for (const phase of ['Converged', 'Waiting', 'Progressing', 'Degraded'])
    assert.equal(value(text, `ovn_gwmode_phase{phase="${phase}"}`), 0);
  for (const mode of ['local', 'shared', 'none']) {
    assert.equal(value(text, `ovn_gwmode_desired_mode{mode="${mode}"}`), 0);
    assert.equal(value(text, `ovn_gwmode_ovnkube_mode{mode="${mode}"}`), 0);
  }
  assert.match(text, /^ovn_gwmode_build_info\{version="0\.1\.0",nodejs_version="[\d.]+",restart_strategy="cri"\} 1$/m);
  assert.match(text, /^process_cpu_seconds_total /m, 'the default process metrics');
  assert.match(text, /^nodejs_heap_size_used_bytes /m);
  if (skipWithoutPromtool(t)) return;
  m.onStatus(report());
  const checked = checkMetrics(await m.expose());
  assert.equal(checked.code, 0, checked.output);
});

test('a status report sets one phase, one desired mode, the reason codes and each CIDR, and a reload drops a CIDR no longer watched', async () => {
  const m = new AgentMetrics({ version: '0.1.0', strategy: 'cri', processMetrics: false });
  m.onStatus(report());
  let text = await m.expose();
  assert.equal(value(text, 'ovn_gwmode_phase{phase="Converged"}'), 1);
  for (const p of ['Waiting', 'Progressing', 'Degraded'])
    assert.equal(value(text, `ovn_gwmode_phase{phase="${p}"}`), 0);
  assert.equal(value(text, 'ovn_gwmode_desired_mode{mode="local"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_desired_mode{mode="shared"}'), 0);
  assert.equal(value(text, 'ovn_gwmode_status_reason{code="InSync"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_status_reason{code="RepairsSuspended"}'), 0);
  assert.equal(value(text, 'ovn_gwmode_route_in_sync{cidr="10.96.0.0/16",family="ipv4"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_route_in_sync{cidr="fd00:10:96::/112",family="ipv6"}'), 0);
  assert.equal(value(text, 'ovn_gwmode_route_repairs_suspended{cidr="fd00:10:96::/112"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_ovnkube_restart_pending'), 1);
  assert.equal(
    value(text, 'ovn_gwmode_last_reconcile_timestamp_seconds'),
    Date.parse('2026-12-02T11:53:31.541Z') / 1000,
  );

  m.onStatus(
    report({
      desiredMode: null,
      phase: 'Degraded',
      reasonCodes: ['ModeFileInvalid', 'ReconcileFailed'],
      modeSource: { path: '/etc/mode', error: 'garbled', detail: null },
      routes: [report().routes[0]!],
    }),
  );
  text = await m.expose();
  assert.equal(value(text, 'ovn_gwmode_phase{phase="Degraded"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_phase{phase="Converged"}'), 0);
  assert.equal(value(text, 'ovn_gwmode_desired_mode{mode="none"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_mode_file_invalid'), 1);
  assert.equal(value(text, 'ovn_gwmode_status_reason{code="ReconcileFailed"}'), 1);
  assert.equal(
    value(text, 'ovn_gwmode_route_in_sync{cidr="fd00:10:96::/112",family="ipv6"}'),
    undefined,
    'a CIDR no longer watched is gone',
  );
});

test('the hooks count replaces by direction and result, kernel and reconcile errors by code, restarts by strategy and result, and time passes', async () => {
  const m = new AgentMetrics({ version: '0.1.0', strategy: 'signal', processMetrics: false });
  const hop = { before: 'via 172.18.0.1 dev br-ex mtu 1400', after: 'via 10.244.1.1 dev ovn-k8s-mp0' };
  m.replace({ cidr: '10.96.0.0/16', mode: 'local', ...hop, result: 'done', code: null });
  m.replace({ cidr: 'fd00:10:96::/112', mode: 'local', ...hop, result: 'failed', code: 'EPERM' });
  m.replace({ cidr: '10.96.0.0/16', mode: 'local', ...hop, result: 'put_back', code: null });
  m.restart({ strategy: 'signal', mode: 'local', result: 'stopped', target: 'pid 42', code: null });
  m.restart({ strategy: 'signal', mode: 'local', result: 'completed', target: null, code: null });
  m.notificationsLost();
  m.modeFileError('/etc/mode');
  m.desiredModeChanged(null, 'local');
  m.reconciled(1000, 1003, null);
  m.reconciled(2000, 2200, 'ERR_GWMODE_VERIFY');
  const text = await m.expose();
  assert.equal(value(text, 'ovn_gwmode_route_replaces_total{direction="to_local",result="done"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_route_replaces_total{direction="to_local",result="failed"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_route_replaces_total{direction="to_local",result="put_back"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_route_replace_errors_total{code="EPERM"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_ovnkube_restarts_total{strategy="signal",result="stopped"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_ovnkube_restarts_total{strategy="signal",result="completed"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_netlink_lost_resyncs_total'), 1);
  assert.equal(value(text, 'ovn_gwmode_mode_file_errors_total'), 1);
  assert.equal(value(text, 'ovn_gwmode_desired_mode_changes_total'), 1);
  assert.equal(value(text, 'ovn_gwmode_reconcile_errors_total{code="ERR_GWMODE_VERIFY"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_reconcile_failures_total'), 1, 'the failed pass, not the one that passed');
  assert.equal(value(text, 'ovn_gwmode_reconcile_duration_seconds_count'), 2);
  assert.equal(value(text, 'ovn_gwmode_reconcile_duration_seconds_bucket{le="0.005"}'), 1);
  assert.equal(value(text, 'ovn_gwmode_reconcile_duration_seconds_bucket{le="0.25"}'), 2);
  assert.doesNotMatch(text, /pid 42|172\.18\.0\.1/, 'no target or route text in a label');
});

test('error codes as labels: errno names and agent codes pass, anything else is UNKNOWN', () => {
  assert.equal(errorCode(Object.assign(new Error('x'), { code: 'ENOENT' })), 'ENOENT');
  assert.equal(errorCode({ code: 'ERR_GWMODE_NETLINK_TIMEOUT' }), 'ERR_GWMODE_NETLINK_TIMEOUT');
  assert.equal(errorCode(new Error('no code')), 'UNKNOWN');
  assert.equal(errorCode({ code: 'route 10.96.0.0/16 is gone' }), 'UNKNOWN');
  assert.equal(errorCode({ code: 42 }), 'UNKNOWN');
  assert.equal(errorCode(null), 'UNKNOWN');
});

test('--metrics-address takes a literal HOST:PORT, IPv6 in brackets, and refuses the rest', () => {
  assert.deepEqual(parseListenAddress('127.0.0.1:9464'), { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(parseListenAddress('[::1]:9464'), { host: '::1', port: 9464 });
  assert.deepEqual(parseListenAddress('0.0.0.0:1'), { host: '0.0.0.0', port: 1 });
  for (const bad of [
    'localhost:9464',
    '127.0.0.1',
    '127.0.0.1:0',
    '127.0.0.1:65536',
    '::1:9464',
    '[127.0.0.1]:80',
    ':9464',
  ]) {
    assert.throws(() => parseListenAddress(bad), Error, bad);
  }
});

function get(port: number, path: string, method = 'GET'): Promise<{ code: number; type: string; body: string }> {
  return within(
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path, method }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
      });
      req.on('error', reject).end();
    }),
    10_000,
    `${method} ${path}`,
  );
}

test('the TCP listener serves /metrics in the text format and nothing else', async () => {
  const m = new AgentMetrics({ version: '0.1.0', strategy: 'cri', processMetrics: false });
  m.onStatus(report());
  const l = await MetricsListener.listen({ host: '127.0.0.1', port: 0 }, m);
  try {
    const ok = await get(l.address.port, '/metrics');
    assert.equal(ok.code, 200);
    assert.match(ok.type, /^text\/plain; version=0\.0\.4/);
    assert.match(ok.body, /^ovn_gwmode_phase\{phase="Converged"\} 1$/m);
    assert.equal((await get(l.address.port, '/status')).code, 404, 'the status stays on the socket');
    assert.equal((await get(l.address.port, '/metrics', 'POST')).code, 405);
  } finally {
    await l.close();
  }
});

test('stalled clients do not lock Prometheus out of the TCP listener: each is cut, and scrapes get through while they come and go', async () => {
  const m = new AgentMetrics({ version: '0.1.0', strategy: 'cri', processMetrics: false });
  const l = await MetricsListener.listen({ host: '127.0.0.1', port: 0 }, m);
  // Each sends half a request and waits; cut, it comes straight back (until the test ends).
  let stopping = false;
  let cuts = 0;
  const stalled = new Set<net.Socket>();
  const stall = (): Promise<void> =>
    new Promise((resolve) => {
      const c = net.connect(l.address.port, '127.0.0.1', () => {
        c.write('GET /metrics HTTP/1.1\r\nHost: x');
        resolve();
      });
      stalled.add(c);
      // Read (and drop) the server's answer: a paused socket never sees its close.
      c.resume();
      c.on('error', () => undefined).on('close', () => {
        stalled.delete(c);
        if (stopping) return;
        cuts++;
        void stall();
      });
    });
  try {
    await Promise.all(Array.from({ length: 40 }, stall));
    for (let i = 0; i < 5; i++) assert.equal((await get(l.address.port, '/metrics')).code, 200, `scrape ${i}`);
    await within(
      new Promise<void>((resolve) => {
        const poll = setInterval(() => cuts >= 40 && (clearInterval(poll), resolve()), 50);
      }),
      30_000,
      'every stalled client is cut',
    );
    for (let i = 0; i < 5; i++)
      assert.equal((await get(l.address.port, '/metrics')).code, 200, `scrape ${i} after cuts`);
  } finally {
    stopping = true;
    for (const c of stalled) c.destroy();
    await l.close();
  }
});

test("docs/metrics.md's metrics table names exactly the agent's own metrics, each with its type", async () => {
  const page = readFileSync(fileURLToPath(new URL('../../../docs/metrics.md', import.meta.url)), 'utf8');
  const rows = [...page.matchAll(/^\| `(ovn_gwmode_[a-z_]+)` \| (gauge|counter|histogram) \|/gm)].map(
    (m) => `${m[1]} ${m[2]}`,
  );
  const text = await new AgentMetrics({ version: '0.1.0', strategy: 'cri', processMetrics: false }).expose();
  const exposed = [...text.matchAll(/^# TYPE (ovn_gwmode_\S+) (\S+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual([...rows].sort(), [...exposed].sort());
});
