// One agent per node: the flock on <state-dir>/lock, with real processes.
import { strict as assert } from 'node:assert';
import { closeSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { flockHolderIn } from '../../src/cli/lock.js';
import { addon } from '../../src/native/addon.js';
import { AgentProcess, cli, curl, FAULTY, status, waitForStatus, withAgent, withNode } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';
import { within } from '../helpers/wait.js';

const SHARED_V4 = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';
const ARGS = ['--service-cidr', '10.96.0.0/16', '--mtu', '1400'];

test('lockFile: exclusive between open files, errors shaped like Node system errors, never through a symlink', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-lock-'));
  try {
    const lock = path.join(dir, 'lock');
    const { fd } = addon.lockFile(lock);
    assert.ok(Number.isInteger(fd) && fd > 2);
    assert.equal(statSync(lock).mode & 0o777, 0o640 & ~process.umask());
    // flock belongs to the open file: a second open, even in this process, is refused.
    assert.throws(
      () => addon.lockFile(lock),
      (err: NodeJS.ErrnoException) =>
        err.code === 'EAGAIN' && err.syscall === 'flock' && /^flock EAGAIN: /.test(err.message),
    );
    symlinkSync(lock, path.join(dir, 'link'));
    assert.throws(
      () => addon.lockFile(path.join(dir, 'link')),
      (err: NodeJS.ErrnoException) => err.code === 'ELOOP' && err.syscall === 'open',
    );
    assert.throws(
      () => addon.lockFile(path.join(dir, 'no', 'such', 'dir')),
      (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
    );
    closeSync(fd);
    closeSync(addon.lockFile(lock).fd);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a second agent, whatever its --socket, exits 1 naming the pid that holds the lock; after a SIGKILL the next one starts', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ ns, scratch, agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
    const lockPath = path.join(scratch.stateDir, 'lock');
    assert.equal(statSync(scratch.stateDir).mode & 0o777, 0o750);
    assert.equal(readFileSync(lockPath, 'utf8'), `${agent.child.pid}\n`);

    const otherSocket = path.join(scratch.dir, 'other', 'agent.sock');
    const second = new AgentProcess(ns, scratch, [...ARGS, '--socket', otherSocket]);
    assert.equal(await within(second.exited, 30_000, 'the second agent exits'), 1, second.output);
    assert.equal(
      second.output,
      `ovn-gwmode-agent: another agent (pid ${agent.child.pid}) holds ${lockPath}; not starting a second agent\n`,
    );
    assert.equal(curl(otherSocket, '/healthz').code, 0, 'the second agent never listened');
    assert.equal(status(scratch.socket)?.phase, 'Converged');

    // Another state directory takes another lock; the live socket still refuses it.
    const elsewhere = new AgentProcess(ns, scratch, [...ARGS, '--state-dir', path.join(scratch.dir, 'other-state')]);
    assert.equal(
      await within(elsewhere.exited, 30_000, 'the agent with another state directory exits'),
      1,
      elsewhere.output,
    );
    assert.equal(
      elsewhere.output,
      `ovn-gwmode-agent: another agent is serving on ${scratch.socket}; not starting a second agent\n`,
    );

    // The kernel drops the lock with the process: a SIGKILLed agent blocks nobody.
    agent.child.kill('SIGKILL');
    await agent.exited;
    const third = new AgentProcess(ns, scratch, ARGS);
    try {
      await waitForStatus(third, (s) => s.phase === 'Converged', 'Converged after the first was killed');
      assert.equal(readFileSync(lockPath, 'utf8'), `${third.child.pid}\n`);
    } finally {
      await third.stop();
    }
  });
});

test('an agent on another --state-dir is refused by the live socket: exit 1, one line naming it', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ ns, scratch, agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
    const elsewhere = new AgentProcess(ns, scratch, [...ARGS, '--state-dir', path.join(scratch.dir, 'other')]);
    assert.equal(
      await within(elsewhere.exited, 30_000, 'the agent with another state directory exits'),
      1,
      elsewhere.output,
    );
    assert.equal(
      elsewhere.output,
      `ovn-gwmode-agent: another agent is serving on ${scratch.socket}; not starting a second agent\n`,
    );
    assert.equal(status(scratch.socket)?.phase, 'Converged');
    // The lock file it made stays (docs/failure-modes.md): no agent ever removes one.
    assert.ok(statSync(path.join(scratch.dir, 'other', 'lock')).isFile());
  });
});

test('an agent that cannot start: a --socket under a file is one line and exit 2, a bug is logged and exit 1', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ scratch, startAgent }) => {
    scratch.writeMode('local');
    const file = path.join(scratch.dir, 'a-file');
    writeFileSync(file, '');
    const socket = path.join(file, 'agent.sock');
    const underFile = startAgent([...ARGS, '--socket', socket]);
    assert.equal(
      await within(underFile.exited, 30_000, 'the agent with a --socket under a file exits'),
      2,
      underFile.output,
    );
    assert.match(
      underFile.output,
      new RegExp(
        `^ovn-gwmode-agent: cannot create the socket ${socket}: a part of the path is a file, not a directory \\(mkdir ${file}\\); give --socket a path under a writable directory\n$`,
      ),
    );

    const buggy = startAgent(ARGS, { GWMODE_FAULT: 'bug-at-start' }, FAULTY);
    assert.equal(await within(buggy.exited, 30_000, 'the agent with a bug at start exits'), 1, buggy.output);
    const fatal = buggy.logs().filter((l) => l.level === 60);
    assert.equal(fatal.length, 1, buggy.output);
    assert.equal(fatal[0]!.msg, 'unexpected error: exiting');
    assert.match(JSON.stringify(fatal[0]!.err), /injected: a bug at start/);
  });
});

test('two agents started at once on two sockets: exactly one runs', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ ns, scratch, agent }) => {
    const twin = new AgentProcess(ns, scratch, [...ARGS, '--socket', path.join(scratch.dir, 'twin', 'agent.sock')]);
    try {
      // Whichever lost exits 1 at once; the other keeps running until stopped.
      const loser = await within(
        Promise.race([agent.exited.then(() => agent), twin.exited.then(() => twin)]),
        30_000,
        'one of the two agents exits',
      );
      const winner = loser === agent ? twin : agent;
      assert.equal(loser.child.exitCode, 1, loser.output);
      assert.match(
        loser.output,
        new RegExp(`another agent \\(pid ${winner.child.pid}\\) holds .*/lock; not starting a second agent`),
      );
      assert.equal(winner.child.exitCode, null);
    } finally {
      await twin.stop();
    }
  });
});

test('flockHolderIn: the pid of the flock on that device and inode in /proc/locks, never a waiter, null when none or not visible', () => {
  const text = [
    '1: POSIX  ADVISORY  WRITE 900 fe:00:77 0 EOF',
    '2: FLOCK  ADVISORY  WRITE 4242 00:2d:77 0 EOF',
    '2: -> FLOCK  ADVISORY  WRITE 5151 00:2d:77 0 EOF',
    '3: FLOCK  ADVISORY  WRITE 13 00:2e:77 0 EOF',
    '4: FLOCK  ADVISORY  WRITE 0 103:05:88 0 EOF',
    '',
  ].join('\n');
  assert.equal(flockHolderIn(text, 0x00, 0x2d, 77n), 4242);
  assert.equal(flockHolderIn(text, 0x00, 0x2e, 77n), 13);
  assert.equal(flockHolderIn(text, 0xfe, 0x00, 77n), null, 'a POSIX lock is not the agent lock');
  assert.equal(flockHolderIn(text, 0x103, 0x05, 88n), null, 'pid 0: a holder this pid namespace cannot see');
  assert.equal(flockHolderIn(text, 0x00, 0x2d, 78n), null);
  assert.equal(flockHolderIn('', 0, 0x2d, 77n), null);
});

test('apply refuses while an agent holds the lock; plan takes no lock', async (t) => {
  if (skipWithoutKernel(t)) return;
  // A dry-run agent holds the lock and leaves the stale route for apply to find.
  await withAgent({ mode: 'local', args: [...ARGS, '--dry-run'] }, async ({ ns, scratch, agent }) => {
    await waitForStatus(agent, (s) => s.lastReconcile !== null, 'a pass');
    const planArgs = ['--mode-file', scratch.modeFile, ...ARGS];
    const applyArgs = [...planArgs, '--state-dir', scratch.stateDir];
    const applied = cli(ns, ['apply', ...applyArgs]);
    assert.equal(applied.code, 1);
    assert.equal(applied.stdout, '');
    assert.equal(
      applied.stderr,
      `ovn-gwmode-agent: another agent (pid ${agent.child.pid}) holds ${path.join(scratch.stateDir, 'lock')}; apply does not act beside a running agent: stop it, or leave the work to it\n`,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);

    const planned = cli(ns, ['plan', ...planArgs]);
    assert.equal(planned.code, 1, planned.stderr);
    assert.match(planned.stdout, /replace 10\.96\.0\.0\/16/);

    await agent.stop();
    const alone = cli(ns, ['apply', ...applyArgs]);
    assert.equal(alone.code, 0, alone.stderr);
    assert.match(alone.stdout, /applied: 1 replace/);
  });
});
