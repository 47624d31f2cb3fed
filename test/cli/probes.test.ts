// The DaemonSet's probes, exactly as kustomize renders them, run with the container's
// environment against a running agent: kubelet runs them in that environment, where
// every OVN_GWMODE_* variable meant for `run` is set too.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { CLI, waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';

interface Container {
  env: Array<{ name: string; value: string }>;
  livenessProbe: { exec: { command: string[] } };
  readinessProbe: { exec: { command: string[] } };
}

test('the DaemonSet probes, as rendered and with the container env, pass against a running agent', async (t) => {
  if (skipWithoutKernel(t)) return;
  const rendered = spawnSync('kubectl', ['kustomize', 'packaging/kubernetes'], { encoding: 'utf8' });
  if (rendered.error) {
    process.stderr.write(`SKIPPED (kubectl not installed): ${t.name}\n`);
    t.skip('kubectl not installed');
    return;
  }
  assert.equal(rendered.status, 0, rendered.stderr);
  const ds = parseAllDocuments(rendered.stdout)
    .map((d) => d.toJS() as { kind: string; spec: { template: { spec: { containers: Container[] } } } })
    .find((d) => d.kind === 'DaemonSet')!;
  const container = ds.spec.template.spec.containers[0]!;
  const containerEnv = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
  assert.ok(
    Object.keys(containerEnv).some((k) => k.startsWith('OVN_GWMODE_')),
    'the manifest sets OVN_GWMODE_* variables',
  );

  // The agent gets the same environment; its flags name the test's mode file, socket
  // and state directory, and --restart none, where the manifest's paths do not exist here.
  await withAgent({ mode: 'local', env: containerEnv }, async ({ scratch, agent }) => {
    await waitForStatus(agent, (s) => s.lastReconcile !== null, 'the first reconcile');
    for (const probe of [container.livenessProbe, container.readinessProbe]) {
      const [program, ...args] = probe.exec.command;
      assert.equal(program, 'ovn-gwmode-agent');
      // Only the socket is overridden: the manifest leaves it at its default, which
      // does not exist here. The variables naming the mode file and the CRI endpoint
      // stay as rendered: the probe must leave them to `run`.
      const env = { PATH: process.env.PATH, ...containerEnv, OVN_GWMODE_SOCKET: scratch.socket };
      const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env });
      assert.equal(r.status, 0, `${probe.exec.command.join(' ')}: exit ${r.status}\n${r.stderr}`);
    }
  });
});
