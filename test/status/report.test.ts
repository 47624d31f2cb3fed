// One status report, rendered for a person: what a reader sees for unusual routes.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { renderBrief, renderHuman, type StatusReport } from '../../src/status/report.js';

const report: StatusReport = {
  desiredMode: 'local',
  modeSource: { path: '/etc/mode', error: null, detail: null },
  ovnkubeMode: 'local',
  layout: 'legacy',
  platform: { release: '4.8-4.9', evidence: '/host/etc/os-release: ID=rhcos OPENSHIFT_VERSION=4.9' },
  phase: 'Waiting',
  reasons: ['10.96.0.0/16 is a multipath route: not one the agent owns'],
  reasonCodes: ['NotOurRoute'],
  routes: [{ cidr: '10.96.0.0/16', family: 4, observed: null, multipath: true, expected: { dev: 'ovn-k8s-mp0', via: '10.244.1.1', mtu: null }, inSync: false, repairsSuspended: null }],
  dryRun: false,
  lastReconcile: null,
  lastError: null,
  warnings: [],
  version: '0.1.0',
};

test('status: a multipath route reads as multipath, not as "via (none) dev (none)"', () => {
  const text = renderHuman(report);
  assert.match(text, /NO {2}10\.96\.0\.0\/16: multipath \(several next hops\) \(expected via 10\.244\.1\.1 dev ovn-k8s-mp0\)/);
  assert.doesNotMatch(text, /\(none\)/);
  assert.match(text, /^release: {8}4\.8-4\.9 \(\/host\/etc\/os-release: ID=rhcos OPENSHIFT_VERSION=4\.9\)$/m);
  assert.equal(renderBrief(report), 'Waiting desired=local ovnkube=local layout=legacy release=4.8-4.9 routes=0/1 in sync: 10.96.0.0/16 is a multipath route: not one the agent owns');
});

test('status --brief: a bad mode file shows whatever reason comes first, not only in the full status', () => {
  const kept = 'keeping the last valid desired mode "local": /etc/mode: the mode is "locl"; expected exactly "local" or "shared"';
  const restarting: StatusReport = {
    ...report,
    phase: 'Progressing',
    modeSource: { path: '/etc/mode', error: 'the mode is "locl"', detail: null },
    reasons: ['restarted ovnkube-node (pid 42); waiting for a new one running local', kept, 'service routes match desired mode local'],
    reasonCodes: ['RestartAwaited', 'ModeFileInvalid', 'InSync'],
    routes: [{ cidr: '10.96.0.0/16', family: 4, observed: { dev: 'ovn-k8s-mp0', via: '10.244.1.1', mtu: null }, expected: { dev: 'ovn-k8s-mp0', via: '10.244.1.1', mtu: null }, inSync: true, repairsSuspended: null }],
  };
  assert.equal(
    renderBrief(restarting),
    `Progressing desired=local ovnkube=local layout=legacy release=4.8-4.9 routes=1/1 in sync: restarted ovnkube-node (pid 42); waiting for a new one running local; ${kept}`,
  );
  // The first reason alone when nothing is wrong with the input: the line stays short.
  assert.doesNotMatch(renderBrief({ ...restarting, reasons: restarting.reasons.slice(2), reasonCodes: ['InSync'] }), /;/);
});

test('the README lists every reason code the agent can report', async () => {
  const { readFileSync } = await import('node:fs');
  const { REASON_CODES } = await import('../../src/core/reasons.js');
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  assert.deepEqual(REASON_CODES.filter((c) => !readme.includes(`\`${c}\``)), []);
});
