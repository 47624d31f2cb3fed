// The command line as an operator meets it: the real CLI, spawned; no root needed.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CLI } from '../helpers/agent.js';

/** The CLI with exactly the given OVN_GWMODE_* variables (none of the caller's). */
function run(args: string[], vars: Record<string, string> = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OVN_GWMODE_')));
  // The bound only stops a `run` that should have refused its flags from hanging the suite.
  const r = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    env: { ...env, ...vars },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const ALL = 'name a command: run, status, health, plan, apply, rollback or events';

test('no command, or an unknown one: one line naming every command, exit 2', () => {
  assert.deepEqual(run([]), { code: 2, stdout: '', stderr: `ovn-gwmode-agent: ${ALL}; see --help\n` });
  assert.deepEqual(run(['stauts']), {
    code: 2,
    stdout: '',
    stderr: `ovn-gwmode-agent: unknown command "stauts": ${ALL}; see --help\n`,
  });
});

test('an unknown flag: one line naming it, not the whole help, exit 2', () => {
  assert.deepEqual(run(['plan', '--mode-file', '/x', '--bogus-flag', '1']), {
    code: 2,
    stdout: '',
    stderr: 'ovn-gwmode-agent: unknown flag --bogus-flag; see --help\n',
  });
  assert.deepEqual(run(['status', '--jsn']), {
    code: 2,
    stdout: '',
    stderr: 'ovn-gwmode-agent: unknown flag --jsn; see --help\n',
  });
  assert.deepEqual(run(['health', 'now']), {
    code: 2,
    stdout: '',
    stderr: 'ovn-gwmode-agent: unexpected argument "now"; see --help\n',
  });
  assert.deepEqual(run(['status', '--json', '--brief']), {
    code: 2,
    stdout: '',
    stderr: 'ovn-gwmode-agent: Arguments json and brief are mutually exclusive; see --help\n',
  });
  // A daemon flag is not plan's.
  assert.deepEqual(run(['plan', '--mode-file', '/x', '--resync-interval', '5']), {
    code: 2,
    stdout: '',
    stderr: 'ovn-gwmode-agent: unknown flag --resync-interval; see --help\n',
  });
});

test('a misspelt OVN_GWMODE_* variable is named as written, with the likely one', () => {
  for (const command of ['run', 'plan', 'apply', 'status', 'health']) {
    const r = run([command], { OVN_GWMODE_MODEFILE: '/etc/ovn-gwmode-agent/mode' });
    assert.equal(r.code, 2, command);
    assert.equal(
      r.stderr,
      'ovn-gwmode-agent: OVN_GWMODE_MODEFILE: no such setting; did you mean OVN_GWMODE_MODE_FILE? (the variables are OVN_GWMODE_<RUN_FLAG_IN_UPPER_SNAKE_CASE>); see --help\n',
      command,
    );
  }
});

test("each command reads its own variables and leaves the others' alone", () => {
  // plan has no --restart: the variable is run's, and plan goes on to its own --layout.
  const r = run(['plan'], {
    OVN_GWMODE_MODE_FILE: '/nonexistent',
    OVN_GWMODE_SERVICE_CIDR: '10.96.0.0/16',
    OVN_GWMODE_RESTART: 'cri',
    OVN_GWMODE_LAYOUT: 'sideways',
  });
  assert.deepEqual(r, {
    code: 2,
    stdout: '',
    stderr: 'ovn-gwmode-agent: --layout: "sideways" is not one of auto, legacy, routing-via-host\n',
  });
  // status reads the socket from OVN_GWMODE_SOCKET, and nothing else of the agent's.
  const s = run(['status'], {
    OVN_GWMODE_SOCKET: '/nonexistent/agent.sock',
    OVN_GWMODE_MODE_FILE: '/x',
    OVN_GWMODE_SETTLE: '5',
  });
  assert.equal(s.code, 2);
  assert.match(
    s.stderr,
    /^ovn-gwmode-agent: cannot reach the agent on \/nonexistent\/agent\.sock \(ENOENT\): is the agent running\?\n$/,
  );
});

/** The flags a command's --help lists. */
function flagsOf(command: string): string[] {
  const r = run([command, '--help']);
  assert.equal(r.code, 0, r.stderr);
  return [...r.stdout.matchAll(/^ {2}(--[a-z-]+)/gm)]
    .map((m) => m[1]!)
    .filter((f) => f !== '--help' && f !== '--version')
    .sort();
}

test('each --help lists exactly the flags its command uses', () => {
  const planner = [
    '--gateway-interface',
    '--gateway-nexthop',
    '--layout',
    '--log-level',
    '--management-interface',
    '--mode-file',
    '--mtu',
    '--os-release',
    '--ovnkube-config',
    '--ovnkube-mode-check',
    '--service-cidr',
  ];
  const daemon = [
    '--cri-endpoint',
    '--dry-run',
    '--metrics-address',
    '--ovnkube-container',
    '--ovnkube-namespace',
    '--resync-interval',
    '--restart',
    '--restart-grace',
    '--restart-max-per-hour',
    '--restart-min-interval',
    '--restart-timeout',
    '--settle',
    '--socket',
    '--socket-group',
  ];
  assert.deepEqual(flagsOf('plan'), [...planner, '--json', '--state-dir'].sort());
  assert.deepEqual(flagsOf('apply'), [...planner, '--dry-run', '--json', '--state-dir'].sort());
  // rollback puts back the journal's route: no desired mode, no MTU of its own (the next hop it checks the old one against).
  assert.deepEqual(
    flagsOf('rollback'),
    [...planner.filter((f) => !['--mode-file', '--mtu'].includes(f)), '--state-dir', '--yes'].sort(),
  );
  assert.deepEqual(flagsOf('run'), [...planner, ...daemon, '--state-dir'].sort());
  assert.deepEqual(flagsOf('status'), ['--brief', '--json', '--socket', '--watch']);
  assert.deepEqual(flagsOf('health'), ['--ready', '--socket']);
  assert.deepEqual(flagsOf('events'), ['--json', '--since', '--socket']);
});

test('a bad value of a daemon flag: run exits 2 with one line naming it', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-usage-'));
  try {
    // Where a `run` that wrongly started would put its socket and lock: not the node's.
    const base = [
      'run',
      '--mode-file',
      path.join(dir, 'mode'),
      '--service-cidr',
      '10.96.0.0/16',
      '--socket',
      path.join(dir, 'agent.sock'),
      '--state-dir',
      dir,
    ];
    for (const [flag, value] of [
      ['--resync-interval', 'soon'],
      ['--restart', 'sometimes'],
      ['--settle', 'later'],
      ['--restart-max-per-hour', '0'],
      ['--metrics-address', 'localhost:9464'],
    ] as const) {
      const r = run([...base, flag, value]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^ovn-gwmode-agent: ${flag}: [^\n]+\n$`));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
