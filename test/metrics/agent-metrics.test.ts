// The real agent's /metrics on its socket during a migration, checked by promtool,
// and the same series read back through a real Prometheus server scraping the agent's
// --metrics-address on a loopback address of the test namespace.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';
import { checkMetrics, skipWithoutPromtool } from '../helpers/promtool.js';

const ARGS = ['--service-cidr', '10.96.0.0/16', '--mtu', '1400'];

function scrape(socket: string): string {
  const r = spawnSync('curl', ['-sf', '--max-time', '10', '--unix-socket', socket, 'http://localhost/metrics'], { encoding: 'utf8' });
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
