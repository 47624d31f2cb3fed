// The real agent's /metrics on its socket during a migration, checked by promtool,
// and the same series read back through a real Prometheus server scraping the agent's
// --metrics-address on a loopback address of the test namespace.
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { AgentProcess, Scratch, waitForStatus, withAgent } from '../helpers/agent.js';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { PrometheusServer, skipWithoutPrometheus, type Sample } from '../helpers/prometheus.js';
import { checkMetrics, skipWithoutPromtool } from '../helpers/promtool.js';
import { within } from '../helpers/wait.js';

const ARGS = ['--service-cidr', '10.96.0.0/16', '--mtu', '1400'];

function scrape(socket: string): string {
  const r = spawnSync('curl', ['-sf', '--max-time', '10', '--unix-socket', socket, 'http://localhost/metrics'], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, `curl /metrics: ${r.stderr}`);
  return r.stdout;
}

const value = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

test("a migration shows on the socket's /metrics: phase, replaces, the restart, in-sync; promtool accepts it", async (t) => {
  if (skipWithoutKernel(t) || skipWithoutPromtool(t)) return;
  await withAgent({ mode: 'local', args: ARGS }, async ({ agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
    const text = scrape(agent.scratch.socket);
    assert.equal(value(text, 'ovn_gwmode_phase{phase="Converged"}'), 1);
    assert.equal(value(text, 'ovn_gwmode_desired_mode{mode="local"}'), 1);
    assert.equal(value(text, 'ovn_gwmode_route_in_sync{cidr="10.96.0.0/16",family="ipv4"}'), 1);
    assert.equal(value(text, 'ovn_gwmode_route_replaces_total{direction="to_local",result="done"}'), 1);
    assert.equal(value(text, 'ovn_gwmode_ovnkube_restarts_total{strategy="signal",result="stopped"}'), 1);
    assert.equal(value(text, 'ovn_gwmode_ovnkube_restarts_total{strategy="signal",result="completed"}'), 1);
    assert.equal(value(text, 'ovn_gwmode_ovnkube_restart_pending'), 0);
    assert.ok((value(text, 'ovn_gwmode_reconcile_duration_seconds_count') ?? 0) >= 1);
    const checked = checkMetrics(text);
    assert.equal(checked.code, 0, checked.output);
  });
});

test('a real Prometheus scraping the agent sees the phase move and the replace counter rise during a migration', async (t) => {
  if (skipWithoutKernel(t) || skipWithoutPrometheus(t)) return;
  const args = [...ARGS, '--metrics-address', '127.0.0.1:9464'];
  await withAgent({ mode: 'shared', ovnkube: 'shared', args }, async ({ ns, scratch, ovnkube, agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged' && s.desiredMode === 'shared', 'shared Converged');
    const prom = new PrometheusServer(ns, scratch.dir, ['127.0.0.1:9464']);
    try {
      await prom.ready();
      const one = (s: Sample[]) => s.length === 1 && s[0]!.value === 1;
      await prom.until('up{job="ovn-gwmode-agent"}', one, 'the agent up');
      await prom.until('ovn_gwmode_phase{phase="Converged"}', one, 'Converged in shared mode');
      await prom.until(
        'ovn_gwmode_route_replaces_total{direction="to_local",result="done"}',
        (s) => s.length === 1 && s[0]!.value === 0,
        'no replace yet',
      );

      // Desired local while ovnkube-node still runs shared: the agent waits; then the
      // operator's rollout (the stand-in) runs local, and the agent migrates.
      scratch.writeMode('local');
      await waitForStatus(agent, (s) => s.phase === 'Waiting' && s.desiredMode === 'local', 'Waiting on ovnkube-node');
      await prom.until('ovn_gwmode_phase{phase="Waiting"}', one, 'Waiting');
      await prom.until('ovn_gwmode_status_reason{code="OvnkubeOtherMode"}', one, 'the reason code');
      ovnkube.start('local', { respawn: true });
      await waitForStatus(agent, (s) => s.phase === 'Converged' && s.desiredMode === 'local', 'local Converged');
      await prom.until(
        'ovn_gwmode_phase{phase="Converged"} and on() ovn_gwmode_desired_mode{mode="local"} == 1',
        one,
        'Converged in local mode',
      );
      await prom.until(
        'ovn_gwmode_route_replaces_total{direction="to_local",result="done"}',
        one,
        'the replace counted',
      );

      // The history Prometheus kept: the phase moved away and back, the counter rose from 0.
      assert.ok(one(prom.query('max_over_time(ovn_gwmode_phase{phase="Waiting"}[10m])')), 'Waiting was scraped');
      assert.ok(
        prom.query('changes(ovn_gwmode_phase{phase="Converged"}[10m])')[0]!.value >= 2,
        'Converged, then not, then again',
      );
      assert.equal(
        prom.query('min_over_time(ovn_gwmode_route_replaces_total{direction="to_local",result="done"}[10m])')[0]?.value,
        0,
      );
      assert.ok(
        prom.query('increase(ovn_gwmode_ovnkube_restarts_total{result="completed"}[10m])')[0]!.value > 0,
        'the restart completed',
      );
      assert.equal(prom.query('ovn_gwmode_route_in_sync{cidr="10.96.0.0/16"}')[0]?.value, 1);
    } finally {
      await prom.stop();
    }
  });
});

test('a --metrics-address that cannot be listened on: run exits 2 naming it, and leaves no socket behind', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  const blocker = spawn(
    'ip',
    [
      'netns',
      'exec',
      ns.name,
      process.execPath,
      '-e',
      "require('net').createServer().listen(9464, '127.0.0.1', () => console.log('listening')); setTimeout(() => {}, 60000)",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await within(new Promise((resolve) => blocker.stdout.once('data', resolve)), 10_000, 'the blocker listening');
    scratch.writeMode('local');
    const agent = new AgentProcess(ns, scratch, [...ARGS, '--metrics-address', '127.0.0.1:9464']);
    assert.equal(await within(agent.exited, 30_000, 'the agent exits'), 2, agent.output);
    assert.match(
      agent.output,
      /^ovn-gwmode-agent: --metrics-address 127\.0\.0\.1:9464: cannot listen \(EADDRINUSE\)$/m,
    );
    assert.equal(existsSync(scratch.socket), false);
  } finally {
    blocker.kill('SIGKILL');
    ns.destroy();
    scratch.remove();
  }
});
