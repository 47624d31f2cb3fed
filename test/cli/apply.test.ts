// `apply` says what it did and what is left to do, and nothing it did not do. It
// journals its migration in the agent's journal before the first replace: `rollback`
// undoes it, and an agent started after it (even after an apply killed midway)
// finishes it, replaces left and restart owed, without starting it again. A SIGTERM or
// SIGINT finishes the replace in flight and makes no further change.
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import {
  AgentProcess,
  cli,
  DROP_PTRACE,
  FAULTY,
  FakeOvnkube,
  RHCOS_49_OS_RELEASE,
  Scratch,
  waitForStatus,
  withNode,
} from '../helpers/agent.js';
import { seedNode, skipWithoutKernel, type Netns } from '../helpers/netns.js';
import { within } from '../helpers/wait.js';
import { osRelease } from '../helpers/ovnkube-releases.js';
import { systemClock } from '../../src/clock.js';
import { loadOffset, readBootId, toMonotonic } from '../../src/restart/journal-time.js';
import { writeFileSync, mkdirSync, mkdtempSync } from 'node:fs';

/** These nodes run no ovnkube-node: rollback, like apply, is told to act without seeing its mode. */
const NO_OVNKUBE = ['--ovnkube-mode-check', 'off'];

const STALE = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';
const LOCAL = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';
const DUAL = ['--service-cidr', '10.96.0.0/16,fd00:10:96::/112'];

const journalOf = (scratch: Scratch) =>
  JSON.parse(readFileSync(path.join(scratch.stateDir, 'migration-journal.json'), 'utf8'));
const onMp0 = (ns: Netns) => [
  ns.routes('10.96.0.0/16')[0]?.includes('ovn-k8s-mp0') ?? false,
  ns.routes('fd00:10:96::/112')[0]?.includes('ovn-k8s-mp0') ?? false,
];

/** A one-shot command of the fault fixture, in the namespace: its output, and when it is held. */
function faulty(ns: Netns, fault: string, args: string[]) {
  const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, FAULTY, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { OVN_GWMODE_OS_RELEASE: RHCOS_49_OS_RELEASE, ...process.env, GWMODE_FAULT: fault },
  });
  const out = { stdout: '', stderr: '' };
  let onHeld: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (onHeld = resolve));
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    out.stderr += d.toString();
    if (out.stderr.includes('fault: holding')) onHeld();
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, out, held, exited };
}

/** `apply` to local on the seed node's 10.96.0.0/16, the mode check off. */
const applyLocal = (ns: Netns, scratch: Scratch) => {
  scratch.writeMode('local');
  return cli(ns, [
    'apply',
    '--mode-file',
    scratch.modeFile,
    '--service-cidr',
    '10.96.0.0/16',
    '--ovnkube-mode-check',
    'off',
    '--state-dir',
    scratch.stateDir,
  ]);
};

test('apply replaces the route and says ovnkube-node is still to be restarted, by someone else', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch }) => {
    const r = applyLocal(ns, scratch);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    assert.match(
      r.stdout,
      /\nreplaced:\n {2}10\.96\.0\.0\/16: via 172\.18\.0\.1 dev br-ex mtu 1400 -> via 10\.244\.1\.1 dev ovn-k8s-mp0\n/,
    );
    assert.match(
      r.stdout,
      new RegExp(
        `\\napplied: 1 replace\\(s\\)\\nleft: restart ovnkube-node into local gateway mode, owed by the migration journaled in ${scratch.stateDir}: apply does not restart it; the agent sees to it when it runs \\(a new ovnkube-node running local gateway mode completes it\\)\\n$`,
      ),
    );
    assert.doesNotMatch(r.stdout, /Converged|phase:/, 'a node owed a restart is not called done');

    // Run again, the routes in place: nothing replaced, and the restart is still owed.
    const again = applyLocal(ns, scratch);
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      /\nactions: none\n[\s\S]*\napplied: 0 replace\(s\)\nleft: restart ovnkube-node into local gateway mode, owed/,
    );

    // The mode file asks for shared again and the route is back on br-ex (put there by
    // hand): the migration to local on record owes nothing any more, and apply says so.
    ns.ip(`route replace ${STALE}`);
    scratch.writeMode('shared');
    const back = cli(ns, [
      'apply',
      '--mode-file',
      scratch.modeFile,
      '--service-cidr',
      '10.96.0.0/16',
      '--ovnkube-mode-check',
      'off',
      '--state-dir',
      scratch.stateDir,
    ]);
    assert.equal(journalOf(scratch).migration.mode, 'local', 'the record still holds the migration to local');
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.match(back.stdout, /\nactions: none\n[\s\S]*\napplied: 0 replace\(s\)\nleft: nothing\n$/, back.stdout);
    assert.doesNotMatch(back.stdout, /restart ovnkube-node/);
  });
});

test('plan says what it would replace and that it changed nothing, never that a replace is under way; it reads the journal, so a restart the migration owes is left to do', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch }) => {
    scratch.writeMode('local');
    const args = ['--mode-file', scratch.modeFile, '--service-cidr', '10.96.0.0/16', '--ovnkube-mode-check', 'off'];
    const r = cli(ns, ['plan', ...args]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stdout,
      /\nactions:\n {2}would replace 10\.96\.0\.0\/16: via 172\.18\.0\.1 dev br-ex mtu 1400 -> via 10\.244\.1\.1 dev ovn-k8s-mp0\n/,
    );
    assert.match(
      r.stdout,
      /\nplan: would replace 10\.96\.0\.0\/16; changed nothing \(apply carries it out, or the agent\)\n$/,
    );
    assert.doesNotMatch(r.stdout, /Progressing|Replacing|phase:/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);

    const state = ['--state-dir', scratch.stateDir];
    assert.equal(cli(ns, ['apply', ...args, ...state]).code, 0);
    // The route moved, the restart owed: not "nothing to do".
    const owed = cli(ns, ['plan', ...args, ...state]);
    assert.equal(owed.code, 1, owed.stderr);
    assert.match(
      owed.stdout,
      new RegExp(
        `\\nactions: none\\n[\\s\\S]*\\nplan: nothing to replace; changed nothing\\nleft: restart ovnkube-node into local gateway mode, owed by the migration journaled in ${scratch.stateDir}: the agent sees to it when it runs \\(a new ovnkube-node running local gateway mode completes it\\)\\n$`,
      ),
    );
    const json = cli(ns, ['plan', ...args, ...state, '--json']);
    assert.equal(json.code, 1);
    assert.match((JSON.parse(json.stdout) as { restartOwed: string }).restartOwed, /^restart ovnkube-node into local/);
    // apply --dry-run is a plan: its own dry run holds nothing the agent will see to.
    const dry = cli(ns, ['apply', '--dry-run', ...args, ...state]);
    assert.equal(dry.code, 1, dry.stdout);
    assert.match(
      dry.stdout,
      /\napplied: 0 replace\(s\) \(dry run\): nothing to replace; changed nothing\nleft: restart ovnkube-node/,
    );
    // Upgraded to 4.10 since: the agent holds that restart (it repairs nothing there), so plan leaves it out.
    const os410 = path.join(scratch.dir, 'os-release-4.10');
    writeFileSync(os410, osRelease('4.10'));
    const upgraded = cli(ns, ['plan', ...args, ...state], { OVN_GWMODE_OS_RELEASE: os410 });
    assert.equal(upgraded.code, 0, upgraded.stdout);
    assert.doesNotMatch(upgraded.stdout, /left:/);
    // Another node's state (none on record): nothing to do.
    const done = cli(ns, ['plan', ...args, '--state-dir', path.join(scratch.dir, 'none')]);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /\nactions: none\n[\s\S]*\nplan: nothing to replace; changed nothing\n$/);
    // A journal it cannot read is only reported: plan moves nothing aside.
    const file = path.join(scratch.stateDir, 'migration-journal.json');
    writeFileSync(file, '{ torn');
    const files = readdirSync(scratch.stateDir);
    const torn = cli(ns, ['plan', ...args, ...state]);
    assert.equal(torn.code, 0, torn.stderr);
    assert.match(torn.stdout, /\nwarning: the journal cannot be read \(.*\): the agent sets it aside when it runs\n$/);
    const tornJson = JSON.parse(cli(ns, ['plan', ...args, ...state, '--json']).stdout) as { journalError: string };
    assert.match(tornJson.journalError, /^the journal cannot be read \(.*\): the agent sets it aside when it runs$/);
    assert.deepEqual([readFileSync(file, 'utf8'), readdirSync(scratch.stateDir)], ['{ torn', files]);
  });
});

test('--ovnkube-mode-check off: an ovnkube-node running shared whose namespace cannot be read (no CAP_SYS_PTRACE), or two that disagree, hold plan and apply to local (OvnkubeOtherMode), nothing changed', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch, ovnkube }) => {
    scratch.writeMode('local');
    ovnkube.start('shared');
    const args = ['--mode-file', scratch.modeFile, '--service-cidr', '10.96.0.0/16', '--ovnkube-mode-check', 'off'];
    const held = (r: ReturnType<typeof cli>) => {
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(r.stdout, /runs --gateway-mode shared, desired local: .* \[OvnkubeOtherMode\]\n/);
      assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
    };
    const unplaced = cli(ns, ['plan', ...args], {}, DROP_PTRACE);
    assert.match(
      unplaced.stdout,
      /cannot read the network namespace of ovnkube pids? [\d, ]*\(\/proc\/PID\/ns\/net: EACCES\)/,
    );
    held(unplaced);
    held(cli(ns, ['apply', ...args, '--state-dir', scratch.stateDir], {}, DROP_PTRACE));
    // Both read, one local beside the shared one: they disagree.
    const second = new FakeOvnkube(ns, mkdtempSync(path.join(scratch.dir, 'second-')));
    try {
      second.start('local');
      held(cli(ns, ['plan', ...args]));
      held(cli(ns, ['apply', ...args, '--state-dir', scratch.stateDir]));
    } finally {
      second.stop();
    }
    assert.equal(existsSync(path.join(scratch.stateDir, 'migration-journal.json')), false, 'nothing journaled');
  });
});

test('a default route (0.0.0.0/0, ::/0) named as a service CIDR by flag, variable or ovnkube.conf: exit 2 naming it, nothing changed', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true, ipv6: true }, async ({ ns, scratch }) => {
    scratch.writeMode('local');
    const conf = path.join(scratch.dir, 'ovnkube.conf');
    writeFileSync(conf, '[default]\nmtu="1400"\n[kubernetes]\nservice-cidrs="10.96.0.0/16,::/0"\n');
    const routes = () => [ns.ip('-4 route show table all'), ns.ip('-6 route show table all')];
    const before = routes();
    const planFlags = ['--mode-file', scratch.modeFile, '--ovnkube-mode-check', 'off'];
    const state = ['--state-dir', scratch.stateDir];
    const flagsOf: Record<string, string[]> = {
      apply: [...planFlags, ...state],
      plan: planFlags,
      rollback: [...state, '--yes'],
    };
    const cases: Array<[string[], NodeJS.ProcessEnv, string]> = [
      [['--service-cidr', '10.96.0.0/16,0.0.0.0/0'], {}, '--service-cidr: "0.0.0.0/0"'],
      [['--service-cidr', '10.96.0.0/16', '--service-cidr', '::/0'], {}, '--service-cidr: "::/0"'],
      [[], { OVN_GWMODE_SERVICE_CIDR: 'fd00:10:96::/112, ::/0' }, '--service-cidr: "::/0"'],
      [['--ovnkube-config', conf], {}, `--ovnkube-config: ${conf}: [kubernetes] service-cidrs: "::/0"`],
    ];
    for (const [command, flags] of Object.entries(flagsOf)) {
      for (const [args, env, named] of cases) {
        const r = cli(ns, [command, ...flags, ...args], env);
        assert.equal(r.code, 2, `${command} ${args.join(' ')}: ${r.stdout}${r.stderr}`);
        assert.equal(
          r.stderr,
          `ovn-gwmode-agent: ${named} is a default route, never a service network\n`,
          `${command} ${args.join(' ')}`,
        );
      }
    }
    assert.deepEqual(routes(), before, 'no route changed');
    assert.equal(existsSync(path.join(scratch.stateDir, 'migration-journal.json')), false, 'nothing journaled');
  });
});

test('apply in dry run, OVN_GWMODE_DRY_RUN=1 or --dry-run=yes: the replace is planned and shown, nothing changes, nothing is journaled, exit 1', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch }) => {
    scratch.writeMode('local');
    const args = [
      'apply',
      '--mode-file',
      scratch.modeFile,
      '--service-cidr',
      '10.96.0.0/16',
      '--ovnkube-mode-check',
      'off',
      '--state-dir',
      scratch.stateDir,
    ];
    for (const [extra, env] of [
      [[], { OVN_GWMODE_DRY_RUN: '1' }],
      [['--dry-run=yes'], {}],
    ] as const) {
      const r = cli(ns, [...args, ...extra], env);
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stdout,
        /\nactions:\n {2}would replace 10\.96\.0\.0\/16: via 172\.18\.0\.1 dev br-ex mtu 1400 -> via 10\.244\.1\.1 dev ovn-k8s-mp0\n/,
      );
      assert.match(r.stdout, /dry run: 1 replace\(s\) planned, not applied \[DryRun\]\n/);
      assert.match(
        r.stdout,
        /\napplied: 0 replace\(s\) \(dry run\): would replace 10\.96\.0\.0\/16; changed nothing\n$/,
      );
      assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE], 'the route is as it was');
      assert.equal(existsSync(path.join(scratch.stateDir, 'migration-journal.json')), false, 'nothing journaled');
    }
    // Armed (the variable saying no), the same apply acts.
    const armed = cli(ns, args, { OVN_GWMODE_DRY_RUN: 'off' });
    assert.equal(armed.code, 0, armed.stderr);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
  });
});

test('apply journals its migration, restart owed; rollback --yes puts the route back and marks the record rolled back, and a second rollback finds nothing left to put back', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch }) => {
    const r = applyLocal(ns, scratch);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /"msg":"migration journaled: replacing the routes"/);
    const m = journalOf(scratch).migration;
    assert.deepEqual(
      [m.mode, m.restart, m.identity, m.routes.length, m.routes[0].key.prefix],
      ['local', 'owed', 'process', 1, '10.96.0.0/16'],
    );

    // A second apply finds nothing to do: the record is left as it is.
    const again = applyLocal(ns, scratch);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(journalOf(scratch).migration, m);

    const rollback = () =>
      cli(ns, ['rollback', '--state-dir', scratch.stateDir, '--service-cidr', '10.96.0.0/16', ...NO_OVNKUBE, '--yes']);
    const back = rollback();
    assert.equal(back.code, 0, back.stderr + back.stdout);
    assert.match(
      back.stdout,
      /^migration: to local, started \S+, 1 route\(s\) replaced\nactions:\n {2}replace 10\.96\.0\.0\/16: via 10\.244\.1\.1 dev ovn-k8s-mp0 -> via 172\.18\.0\.1 dev br-ex mtu 1400\nput back: 1 route\(s\)\n/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
    const after = journalOf(scratch).migration;
    assert.equal(after.routes.length, 1, 'the route put back stays on record');
    assert.ok(after.rollback.startedAt <= after.rollback.doneAt, 'the rollback journaled, then marked done');

    const twice = rollback();
    assert.equal(twice.code, 0, twice.stderr);
    assert.match(twice.stdout, /\[NothingToRollBack\]\n$/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
  });
});

test('a journal written by apply is read by the agent: it requests the restart the migration owes, once, and migrates nothing again', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch, ovnkube, startAgent }) => {
    scratch.writeMode('local');
    ovnkube.start('local', { respawn: true });
    const r = cli(ns, [
      'apply',
      '--mode-file',
      scratch.modeFile,
      '--service-cidr',
      '10.96.0.0/16',
      '--state-dir',
      scratch.stateDir,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const startedAt = journalOf(scratch).migration.startedAt;

    const agent = startAgent(['--service-cidr', '10.96.0.0/16', '--restart', 'signal']);
    const s = await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged after the restart apply left owed');
    assert.equal(s.restart?.count, 1, 'one restart request');
    assert.equal(ovnkube.starts, 2, 'ovnkube-node restarted exactly once');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    const m = journalOf(scratch).migration;
    assert.deepEqual(
      [m.mode, m.restart, m.startedAt],
      ['local', 'done', startedAt],
      "apply's migration, finished, not a second one",
    );
    assert.ok(
      !agent.logs().some((l) => l.msg === 'migration journaled: replacing the routes'),
      'the agent started no migration',
    );
  });
});

test('apply SIGKILLed after the first of two replaces: the agent completes the migration from the journal, with one restart in all', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true, ipv6: true }, async ({ ns, scratch, ovnkube, startAgent }) => {
    scratch.writeMode('local');
    ovnkube.start('local', { respawn: true });
    const killed = faulty(ns, 'kill-after-first-replace', [
      'apply',
      '--mode-file',
      scratch.modeFile,
      ...DUAL,
      '--state-dir',
      scratch.stateDir,
    ]);
    const end = await within(killed.exited, 30_000, 'apply ends');
    assert.equal(end.signal, 'SIGKILL', killed.out.stderr);
    assert.equal(onMp0(ns).filter(Boolean).length, 1, 'one family replaced, the other not');
    const m = journalOf(scratch).migration;
    assert.deepEqual(
      [m.mode, m.restart, m.routes.length],
      ['local', 'owed', 2],
      'the whole migration was on record before the first replace',
    );

    const agent = startAgent([...DUAL, '--restart', 'signal']);
    const s = await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged by the agent');
    assert.deepEqual(onMp0(ns), [true, true]);
    assert.equal(s.restart?.count, 1, 'one restart request for the one migration');
    assert.equal(ovnkube.starts, 2, 'ovnkube-node restarted exactly once');
    assert.equal(journalOf(scratch).migration.startedAt, m.startedAt, 'completed, not started again');
  });
});

test('SIGTERM while the first of two replaces is in flight: it finishes, the second is not made, nothing is put back, exit 1 saying so; rollback --yes then undoes the one', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true, ipv6: true });
  const scratch = new Scratch();
  try {
    scratch.writeMode('local');
    const run = faulty(ns, 'hold-first-replace', [
      'apply',
      '--mode-file',
      scratch.modeFile,
      ...DUAL,
      '--ovnkube-mode-check',
      'off',
      '--state-dir',
      scratch.stateDir,
    ]);
    await within(run.held, 30_000, 'the first replace held');
    run.child.kill('SIGTERM');
    const end = await within(run.exited, 30_000, 'apply ends');
    assert.equal(end.code, 1, run.out.stderr);
    assert.match(
      run.out.stderr,
      /\novn-gwmode-agent: apply: interrupted by SIGTERM after 1 of 2 replace\(s\): replaced (10\.96\.0\.0\/16|fd00:10:96::\/112); not replaced (10\.96\.0\.0\/16|fd00:10:96::\/112); the journal records the migration to local: the agent completes it when it runs, `rollback --yes` puts back what was replaced\n$/,
    );
    assert.doesNotMatch(run.out.stderr, /put back /, 'nothing put back');
    assert.equal(run.out.stdout, '');
    assert.equal(onMp0(ns).filter(Boolean).length, 1, 'the replace in flight was finished, the next not made');
    assert.equal(journalOf(scratch).migration.routes.length, 2);

    const back = cli(ns, ['rollback', '--state-dir', scratch.stateDir, ...DUAL, ...NO_OVNKUBE, '--yes']);
    assert.equal(back.code, 0, back.stderr + back.stdout);
    assert.match(back.stdout, /\nput back: 1 route\(s\)\n/, 'the route never replaced is left as it is');
    assert.deepEqual(onMp0(ns), [false, false]);
  } finally {
    ns.destroy();
    scratch.remove();
  }
});

test('the kernel refuses the second of two replaces: the first is put back, exit 1 saying so, and the migration is off the record', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true, ipv6: true }, async ({ ns, scratch }) => {
    scratch.writeMode('local');
    // Without its connected route, mp0's IPv6 next hop is unreachable: the kernel refuses the v6 replace.
    ns.ip('-6 route del fd00:10:244:1::/64 dev ovn-k8s-mp0');
    const r = cli(ns, [
      'apply',
      '--mode-file',
      scratch.modeFile,
      ...DUAL,
      '--ovnkube-mode-check',
      'off',
      '--state-dir',
      scratch.stateDir,
    ]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /\novn-gwmode-agent: replace of fd00:10:96::\/112 failed: .*EHOSTUNREACH.*; put back 10\.96\.0\.0\/16\n$/,
    );
    assert.deepEqual(onMp0(ns), [false, false]);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
    assert.equal(journalOf(scratch).migration, null, 'nothing migrated: no restart owed, nothing for rollback');
  });
});

test('SIGINT before the first change: apply abandons at once, exit 1, nothing changed, nothing journaled', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  try {
    scratch.writeMode('local');
    const run = faulty(ns, 'hold-first-dump', [
      'apply',
      '--mode-file',
      scratch.modeFile,
      '--service-cidr',
      '10.96.0.0/16',
      '--ovnkube-mode-check',
      'off',
      '--state-dir',
      scratch.stateDir,
    ]);
    await within(run.held, 30_000, 'the first dump held');
    run.child.kill('SIGINT');
    const end = await within(run.exited, 30_000, 'apply ends');
    assert.equal(end.code, 1, run.out.stderr);
    assert.match(
      run.out.stderr,
      /\novn-gwmode-agent: apply: interrupted by SIGINT before any change; nothing changed\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
    assert.equal(existsSync(path.join(scratch.stateDir, 'migration-journal.json')), false);
  } finally {
    ns.destroy();
    scratch.remove();
  }
});

test('SIGTERM while the first of two put-backs of rollback is in flight: it finishes, the other waits; after an agent moved the first again, rollback run again puts back both', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true, ipv6: true });
  const scratch = new Scratch();
  let agent: AgentProcess | undefined;
  try {
    scratch.writeMode('local');
    const applied = cli(ns, [
      'apply',
      '--mode-file',
      scratch.modeFile,
      ...DUAL,
      '--ovnkube-mode-check',
      'off',
      '--state-dir',
      scratch.stateDir,
    ]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.deepEqual(onMp0(ns), [true, true]);

    const run = faulty(ns, 'hold-first-replace', [
      'rollback',
      '--state-dir',
      scratch.stateDir,
      ...DUAL,
      ...NO_OVNKUBE,
      '--yes',
    ]);
    await within(run.held, 30_000, 'the first put-back held');
    run.child.kill('SIGTERM');
    const end = await within(run.exited, 30_000, 'rollback ends');
    assert.equal(end.code, 1, run.out.stderr);
    assert.match(
      run.out.stderr,
      /\novn-gwmode-agent: rollback: interrupted by SIGTERM after 1 of 2 put-back\(s\): put back \S+; not put back \S+: run rollback --yes again to finish\n$/,
    );
    assert.equal(onMp0(ns).filter(Boolean).length, 1);
    const m = journalOf(scratch).migration;
    assert.equal(m.routes.length, 2, 'the route put back stays on record');
    assert.deepEqual(
      [typeof m.rollback.startedAt, m.rollback.doneAt],
      ['number', null],
      'the rollback was journaled before its first put-back, and is not done',
    );

    // An agent started now, its mode file still local, moves the route put back to local
    // again (a repair within the migration on record, nothing journaled).
    agent = new AgentProcess(ns, scratch, [...DUAL, '--restart', 'none', '--ovnkube-mode-check', 'off']);
    await waitForStatus(agent, () => onMp0(ns).every(Boolean), 'both families local again');
    await agent.stop();

    // Both are put back: never one family left in each mode.
    const rest = cli(ns, ['rollback', '--state-dir', scratch.stateDir, ...DUAL, ...NO_OVNKUBE, '--yes']);
    assert.equal(rest.code, 0, rest.stderr + rest.stdout);
    assert.match(rest.stdout, /; a rollback begun at \S+ did not finish\n/);
    assert.match(rest.stdout, /\nput back: 2 route\(s\)\n/);
    assert.deepEqual(onMp0(ns), [false, false]);
  } finally {
    await agent?.stop();
    ns.destroy();
    scratch.remove();
  }
});

test('apply on a journal an agent noted before the wall clock was stepped by a day: its migration is saved under a note of now, so the next agent reads its start as the moment it ran', async (t) => {
  if (skipWithoutKernel(t)) return;
  const bootId = readBootId();
  if (bootId === null) return t.skip('no boot id to note');
  await withNode({ gw0: true }, async ({ ns, scratch }) => {
    const offset = () => systemClock.wall() - systemClock.now();
    mkdirSync(scratch.stateDir, { recursive: true });
    const stale = {
      version: 2,
      migration: null,
      restarts: [],
      clock: { bootId, wallMinusMonotonicMs: offset() - 86_400_000 },
    };
    writeFileSync(path.join(scratch.stateDir, 'migration-journal.json'), JSON.stringify(stale));
    const before = systemClock.now();
    const r = applyLocal(ns, scratch);
    const after = systemClock.now();
    assert.equal(r.code, 0, r.stderr);
    const saved = journalOf(scratch);
    const read = toMonotonic(saved, loadOffset(saved, bootId, offset()), systemClock.now());
    // Give or take the 1 ms that wall minus monotonic (two whole-ms clocks) moves by itself.
    assert.ok(
      read.migration!.startedAt >= before - 1 && read.migration!.startedAt <= after + 1,
      `started at ${read.migration!.startedAt}, apply ran from ${before} to ${after}`,
    );
  });
});

test('an unreadable journal that cannot be moved aside: apply refuses, exit 2 naming it; the agent refuses each change (JournalUnwritable); nothing changed and the file kept', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch, startAgent }) => {
    mkdirSync(scratch.stateDir, { recursive: true });
    const file = path.join(scratch.stateDir, 'migration-journal.json');
    writeFileSync(file, '{"version": 2, "restarts": [');
    // Immutable: readable, but no rename moves it (EPERM).
    const chattr = spawnSync('chattr', ['+i', file], { encoding: 'utf8' });
    if (chattr.status !== 0) {
      process.stderr.write(`SKIPPED (chattr +i does not work here: ${chattr.stderr.trim()}): ${t.name}\n`);
      return t.skip('chattr +i does not work here');
    }
    try {
      const r = applyLocal(ns, scratch);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /migration-journal\.json is corrupt.*could not be moved aside.*changing nothing/);
      assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
      assert.equal(readFileSync(file, 'utf8'), '{"version": 2, "restarts": [');
      // The agent starts and reports, but changes nothing: its first journal save would replace the file.
      const agent = startAgent(['--service-cidr', '10.96.0.0/16', '--ovnkube-mode-check', 'off', '--restart', 'none']);
      const s = await waitForStatus(agent, (st) => st.reasonCodes[0] === 'JournalUnwritable', 'JournalUnwritable');
      assert.match(s.lastError ?? '', /over the unreadable one, not moved aside/);
      await agent.stop();
      assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
      assert.equal(readFileSync(file, 'utf8'), '{"version": 2, "restarts": [');
    } finally {
      spawnSync('chattr', ['-i', file]);
    }
  });
});
