// One status report, rendered for a person: what a reader sees for unusual routes.
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { REASON_CODES } from '../../src/core/reasons.js';
import type { Phase } from '../../src/core/types.js';
import { renderBrief, renderHuman, type StatusReport } from '../../src/status/report.js';

// Every phase a report can have (core/types.ts's Phase; the record makes the compiler hold the list to it).
const PHASE_SET: Record<Phase, true> = { Converged: true, Waiting: true, Progressing: true, Degraded: true };
const PHASES = Object.keys(PHASE_SET);

const report: StatusReport = {
  desiredMode: 'local',
  modeSource: { path: '/etc/mode', error: null, detail: null },
  ovnkubeMode: 'local',
  layout: 'legacy',
  platform: { release: '4.8-4.9', evidence: '/host/etc/os-release: ID=rhcos OPENSHIFT_VERSION=4.9' },
  phase: 'Waiting',
  reasons: ['10.96.0.0/16 is a multipath route: not one the agent owns'],
  reasonCodes: ['NotOurRoute'],
  routes: [
    {
      cidr: '10.96.0.0/16',
      family: 4,
      observed: null,
      multipath: true,
      expected: { dev: 'ovn-k8s-mp0', via: '10.244.1.1', mtu: null },
      inSync: false,
      repairsSuspended: null,
    },
  ],
  dryRun: false,
  lastReconcile: null,
  lastError: null,
  warnings: [],
  version: '0.1.0',
};

test('status: a multipath route reads as multipath, not as "via (none) dev (none)"', () => {
  const text = renderHuman(report);
  assert.match(
    text,
    /NO {2}10\.96\.0\.0\/16: multipath \(several next hops\) \(expected via 10\.244\.1\.1 dev ovn-k8s-mp0\)/,
  );
  assert.doesNotMatch(text, /\(none\)/);
  assert.match(text, /^release: {8}4\.8-4\.9 \(\/host\/etc\/os-release: ID=rhcos OPENSHIFT_VERSION=4\.9\)$/m);
  assert.equal(
    renderBrief(report),
    'Waiting desired=local ovnkube=local layout=legacy release=4.8-4.9 routes=0/1 in sync: 10.96.0.0/16 is a multipath route: not one the agent owns',
  );
});

/** The rows of the table under `## heading` in docs/status.md: the codes of the first column, and the second column. */
function statusTable(heading: string): Array<{ codes: string[]; phase: string }> {
  const page = readFileSync(new URL('../../../docs/status.md', import.meta.url), 'utf8');
  const start = page.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/status.md has a section "${heading}"`);
  const end = page.indexOf('\n## ', start + 1);
  return page
    .slice(start, end < 0 ? undefined : end)
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) => ({
      codes: [...l.split('|')[1]!.matchAll(/`(\w+)`/g)].map((m) => m[1]!),
      phase: l.split('|')[2]!.trim(),
    }));
}

test("docs/status.md says what to do for every reason code the agent can report, rollback's included, and for no other", () => {
  const listed = statusTable('Reason codes').flatMap((r) => r.codes);
  assert.deepEqual(
    REASON_CODES.filter((c) => !listed.includes(c)),
    [],
    'codes with no row',
  );
  assert.deepEqual(
    listed.filter((c) => !(REASON_CODES as readonly string[]).includes(c)),
    [],
    'rows of no code',
  );
  assert.equal(new Set(listed).size, listed.length, 'each code in one row');
});

test('docs/status.md says what each phase means, and every phase of the reason-code table is one of them', () => {
  const phases = statusTable('Phases').flatMap((r) => r.codes);
  assert.deepEqual([...phases].sort(), [...PHASES].sort());
  // The code table's second column names a phase, "any", the plan's, or rollback's.
  for (const row of statusTable('Reason codes')) {
    assert.match(
      row.phase,
      /^(Converged|Waiting|Progressing|Degraded|any|the plan's.*|`rollback`.*)$/,
      row.codes.join(', '),
    );
  }
});

test('status --brief: a bad mode file shows whatever reason comes first, not only in the full status', () => {
  const kept =
    'keeping the last valid desired mode "local": /etc/mode: the mode is "locl"; expected exactly "local" or "shared"';
  const restarting: StatusReport = {
    ...report,
    phase: 'Progressing',
    modeSource: { path: '/etc/mode', error: 'the mode is "locl"', detail: null },
    reasons: [
      'restarted ovnkube-node (pid 42); waiting for a new one running local',
      kept,
      'service routes match desired mode local',
    ],
    reasonCodes: ['RestartAwaited', 'ModeFileInvalid', 'InSync'],
    routes: [
      {
        cidr: '10.96.0.0/16',
        family: 4,
        observed: { dev: 'ovn-k8s-mp0', via: '10.244.1.1', mtu: null },
        expected: { dev: 'ovn-k8s-mp0', via: '10.244.1.1', mtu: null },
        inSync: true,
        repairsSuspended: null,
      },
    ],
  };
  assert.equal(
    renderBrief(restarting),
    `Progressing desired=local ovnkube=local layout=legacy release=4.8-4.9 routes=1/1 in sync: restarted ovnkube-node (pid 42); waiting for a new one running local; ${kept}`,
  );
  // The first reason alone when nothing is wrong with the input: the line stays short.
  assert.doesNotMatch(
    renderBrief({ ...restarting, reasons: restarting.reasons.slice(2), reasonCodes: ['InSync'] }),
    /;/,
  );
});
