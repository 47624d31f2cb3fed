// The monitoring Component (packaging/kubernetes/monitoring): its alert rules pass
// promtool's unit tests, each alert both firing and staying quiet; the rules name
// only metrics the agent exports; kustomize renders it onto the DaemonSet.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { AgentMetrics } from '../../src/metrics/metrics.js';
import { skipWithoutPromtool } from '../helpers/promtool.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MONITORING = path.join(ROOT, 'packaging/kubernetes/monitoring');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
const ruleDoc = parse(readFileSync(path.join(MONITORING, 'prometheusrule.yaml'), 'utf8')) as {
  kind: string;
  spec: { groups: Array<{ rules: Rule[] }> };
};
const rules = ruleDoc.spec.groups.flatMap((g) => g.rules);

/** The PrometheusRule's groups as a plain rule file, beside a copy of the unit tests, in a scratch directory. */
function withRuleFiles(fn: (dir: string) => void): void {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-rules-'));
  try {
    writeFileSync(path.join(dir, 'rules.yaml'), stringify(ruleDoc.spec));
    copyFileSync(path.join(MONITORING, 'tests/alerts.test.yaml'), path.join(dir, 'alerts.test.yaml'));
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('promtool: the rules check, and every alert fires and stays quiet as its unit tests say', (t) => {
  if (skipWithoutPromtool(t)) return;
  withRuleFiles((dir) => {
    const check = spawnSync('promtool', ['check', 'rules', 'rules.yaml'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(check.status, 0, check.stdout + check.stderr);
    const unit = spawnSync('promtool', ['test', 'rules', 'alerts.test.yaml'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(unit.status, 0, unit.stdout + unit.stderr);
  });
});

test('each alert has a unit test where it fires and one where it does not', () => {
  const spec = parse(readFileSync(path.join(MONITORING, 'tests/alerts.test.yaml'), 'utf8')) as {
    tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
  };
  const cases = spec.tests.flatMap((t) => t.alert_rule_test);
  for (const r of rules) {
    assert.ok(
      cases.some((c) => c.alertname === r.alert && (c.exp_alerts?.length ?? 0) > 0),
      `${r.alert} fires somewhere`,
    );
    assert.ok(
      cases.some((c) => c.alertname === r.alert && (c.exp_alerts?.length ?? 0) === 0),
      `${r.alert} stays quiet somewhere`,
    );
  }
  assert.deepEqual(rules.map((r) => r.alert).sort(), [
    'OvnGwmodeAgentDown',
    'OvnGwmodeModeFileInvalid',
    'OvnGwmodeNotConverged',
    'OvnGwmodeOvnkubeRestartFailing',
    'OvnGwmodeOvnkubeRestartPending',
    'OvnGwmodeRepairsSuspended',
  ]);
});

test('the alerts name only metrics and reason codes the agent exports, and each says how bad it is', async () => {
  const exposition = await new AgentMetrics({ version: 'test', strategy: 'cri', processMetrics: false }).expose();
  const exported = new Set([...exposition.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!));
  for (const r of rules) {
    for (const [name] of r.expr.matchAll(/ovn_gwmode_\w+/g))
      assert.ok(exported.has(name), `${r.alert}: ${name} is exported`);
    for (const m of r.expr.matchAll(/code=~"([^"]+)"/g)) {
      for (const code of m[1]!.split('|'))
        assert.match(exposition, new RegExp(`ovn_gwmode_status_reason\\{code="${code}"\\}`), `${r.alert}: ${code}`);
    }
    assert.ok(['warning', 'critical'].includes(r.labels.severity ?? ''), `${r.alert} severity`);
    assert.ok(r.annotations.summary && r.annotations.description, `${r.alert} annotations`);
  }
});

test('kustomize renders the monitoring Component onto the DaemonSet: /metrics on the node IP, a PodMonitor on that port, the rules', (t) => {
  if (spawnSync('sh', ['-c', 'command -v kubectl']).status !== 0) {
    process.stderr.write(`SKIPPED (kubectl is not installed): ${t.name}\n`);
    return t.skip('kubectl is not installed');
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-kustomize-'));
  try {
    const rel = (p: string) => path.relative(dir, path.join(ROOT, p));
    writeFileSync(
      path.join(dir, 'kustomization.yaml'),
      stringify({
        resources: [rel('packaging/openshift')],
        components: [rel('packaging/kubernetes/monitoring'), rel('packaging/kubernetes/monitoring/openshift')],
      }),
    );
    const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const docs = parseAllDocuments(r.stdout).map(
      (d) =>
        d.toJSON() as {
          kind: string;
          metadata: { name: string; namespace?: string; labels?: Record<string, string> };
          spec: any;
        },
    );
    const byKind = (k: string) => docs.find((d) => d.kind === k)!;
    const agent = byKind('DaemonSet').spec.template.spec.containers.find((c: { name: string }) => c.name === 'agent');
    const env = Object.fromEntries(agent.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    assert.equal(env.OVN_GWMODE_METRICS_ADDRESS, '$(POD_IP):9464');
    assert.ok(
      agent.env.findIndex((e: { name: string }) => e.name === 'POD_IP') <
        agent.env.findIndex((e: { name: string }) => e.name === 'OVN_GWMODE_METRICS_ADDRESS'),
      'POD_IP is defined before it is used',
    );
    assert.deepEqual(agent.ports, [{ name: 'metrics', containerPort: 9464, protocol: 'TCP' }]);
    const monitor = byKind('PodMonitor');
    // Beside the cluster network operator (packaging/openshift), whose namespace user-workload monitoring scrapes.
    assert.equal(monitor.metadata.namespace, 'openshift-network-operator');
    assert.equal(monitor.spec.podMetricsEndpoints[0].port, 'metrics');
    assert.deepEqual(monitor.spec.selector.matchLabels, byKind('DaemonSet').spec.selector.matchLabels);
    assert.equal(monitor.spec.jobLabel, 'app.kubernetes.io/name', 'job="ovn-gwmode-agent", as the alerts expect');
    assert.equal(byKind('PrometheusRule').metadata.namespace, 'openshift-network-operator');
    assert.equal(
      docs.find((d) => d.kind === 'Namespace'),
      undefined,
      "the operator's namespace is not rendered, so not relabelled",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
