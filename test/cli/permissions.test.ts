// What a caller without root meets: one line saying which permission is missing,
// never "is the agent running?" or a stack trace. Run as uid 65534 with setpriv.
import { strict as assert } from 'node:assert';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';
import { NOBODY, runAsNobody, skipWithoutSetpriv } from '../helpers/nobody.js';

test("status and health as a user outside the socket's group: permission denied, exit 2", async (t) => {
  if (skipWithoutKernel(t) || skipWithoutSetpriv(t)) return;
  await withAgent({ mode: 'local' }, async ({ scratch, agent }) => {
    await waitForStatus(agent, (s) => s.lastReconcile !== null, 'a pass');
    for (const args of [['status'], ['health'], ['health', '--ready']]) {
      const r = runAsNobody([process.execPath, CLI, ...args, '--socket', scratch.socket]);
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.stdout, '');
      assert.equal(
        r.stderr,
        `ovn-gwmode-agent: permission denied on ${scratch.socket} (EACCES): the caller must be root or in the socket's group\n`,
      );
    }
  });
});

test('run as non-root: a socket or state directory it may not write is one line naming the path, exit 2', (t) => {
  if (skipWithoutSetpriv(t)) return;
  // root's, and only readable to others: where a non-root agent may create nothing.
  const closed = mkdtempSync(path.join(tmpdir(), 'gwmode-root-'));
  chmodSync(closed, 0o755);
  // nobody's own: the mode file and a writable state directory.
  const own = mkdtempSync(path.join(tmpdir(), 'gwmode-nobody-'));
  chmodSync(own, 0o755);
  chownSync(own, NOBODY, NOBODY);
  const modeFile = path.join(own, 'mode');
  writeFileSync(modeFile, 'local\n', { mode: 0o644 });
  try {
    const base = [
      process.execPath,
      CLI,
      'run',
      '--mode-file',
      modeFile,
      '--service-cidr',
      '10.96.0.0/16',
      '--restart',
      'none',
    ];
    const socket = path.join(closed, 'run', 'agent.sock');
    const noSocketDir = runAsNobody([...base, '--state-dir', path.join(own, 'state'), '--socket', socket]);
    assert.equal(noSocketDir.code, 2, noSocketDir.stderr);
    assert.equal(
      noSocketDir.stderr,
      `ovn-gwmode-agent: cannot create the socket ${socket}: permission denied (mkdir ${path.join(closed, 'run')}); run as root, or give the agent's user write access to ${closed}\n`,
    );

    mkdirSync(path.join(closed, 'run'), { mode: 0o755 });
    const noSocket = runAsNobody([...base, '--state-dir', path.join(own, 'state'), '--socket', socket]);
    assert.equal(noSocket.code, 2, noSocket.stderr);
    assert.match(
      noSocket.stderr,
      new RegExp(
        `^ovn-gwmode-agent: cannot create the socket ${socket}: permission denied \\(\\w+ [^)]+\\); run as root, or give the agent's user write access to ${path.join(closed, 'run')}\\n$`,
      ),
    );

    const lock = path.join(closed, 'state', 'lock');
    const noStateDir = runAsNobody([
      ...base,
      '--state-dir',
      path.join(closed, 'state'),
      '--socket',
      path.join(own, 'agent.sock'),
    ]);
    assert.equal(noStateDir.code, 2, noStateDir.stderr);
    assert.equal(
      noStateDir.stderr,
      `ovn-gwmode-agent: cannot lock ${lock}: permission denied (mkdir ${path.join(closed, 'state')}); run as root, or give the agent's user write access to ${closed}\n`,
    );
  } finally {
    rmSync(closed, { recursive: true, force: true });
    rmSync(own, { recursive: true, force: true });
  }
});

test('plan as non-root beside a journal closed to it: the journal is reported unread (run this as root), never as one the agent sets aside', (t) => {
  if (skipWithoutSetpriv(t)) return;
  const state = mkdtempSync(path.join(tmpdir(), 'gwmode-root-'));
  writeFileSync(path.join(state, 'migration-journal.json'), '{"version":3,"migration":null,"restarts":[]}', {
    mode: 0o600,
  });
  const own = mkdtempSync(path.join(tmpdir(), 'gwmode-nobody-'));
  chmodSync(own, 0o755);
  const modeFile = path.join(own, 'mode');
  writeFileSync(modeFile, 'local\n', { mode: 0o644 });
  chmodSync(state, 0o755);
  try {
    const args = ['plan', '--mode-file', modeFile, '--service-cidr', '10.96.0.0/16', '--state-dir', state, '--json'];
    const r = runAsNobody([process.execPath, CLI, ...args]);
    const { journalError } = JSON.parse(r.stdout) as { journalError: string | null };
    assert.match(journalError ?? '', /EACCES.*: run this as root$/, r.stdout + r.stderr);
  } finally {
    rmSync(state, { recursive: true, force: true });
    rmSync(own, { recursive: true, force: true });
  }
});
