// The signal strategy against real processes: the one ovnkube-node of this network
// namespace gets SIGTERM, and a PID that now belongs to another process never does.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SignalRestart } from '../../src/restart/strategy.js';
import { quietBody, withForkedOvnkube } from '../helpers/forked-ovnkube.js';

// The stand-ins here never fork (quietBody): the scan leaves a fork's copies out (the last
// test), but these tests count processes and want only the ones they start.

test('signal: SIGTERM reaches the one ovnkube --init-node process, after its start time is checked', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-signal-'));
  const binary = path.join(dir, 'ovnkube');
  copyFileSync('/bin/sh', binary);
  const child = spawn(binary, ['-c', quietBody(dir), 'ovnkube', '--init-node', 'n1', '--gateway-mode', 'local'], {
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    const strategy = new SignalRestart();
    const found = await strategy.find();
    assert.ok('target' in found, JSON.stringify(found));
    assert.equal(found.target.describe, `pid ${child.pid}`);

    // The same PID with another start time: a reused PID. Never signalled.
    const reused = { id: `pid ${child.pid} start 1`, describe: `pid ${child.pid}` };
    await assert.rejects(strategy.restart(reused), /now belongs to another process/);
    assert.equal(child.exitCode, null, 'still running');

    await strategy.restart(found.target);
    assert.equal(await exited, 0, 'the stand-in exits 0 on SIGTERM');
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('signal: none or two ovnkube-node processes mean no target, with the count', async () => {
  const strategy = new SignalRestart();
  const none = await strategy.find();
  assert.deepEqual(none, { error: '0 ovnkube --init-node processes in this network namespace (expected exactly 1)' });
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-signal-'));
  const binary = path.join(dir, 'ovnkube');
  copyFileSync('/bin/sh', binary);
  const body = quietBody(dir);
  const two = [1, 2].map(() =>
    spawn(binary, ['-c', body, 'ovnkube', '--init-node', 'n1', '--gateway-mode', 'local'], { stdio: 'ignore' }),
  );
  try {
    // Both must be visible in /proc before asking: a bounded number of looks, not a clock.
    let found = await strategy.find();
    for (let i = 0; i < 2000 && !('error' in found && found.error.startsWith('2 ')); i++) {
      await new Promise((r) => setImmediate(r));
      found = await strategy.find();
    }
    assert.deepEqual(found, {
      error: '2 ovnkube --init-node processes in this network namespace (expected exactly 1)',
    });
    assert.deepEqual(
      two.map((c) => c.exitCode),
      [null, null],
      'neither was signalled',
    );
  } finally {
    for (const c of two) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test("signal: a fork of ovnkube-node that has not exec'd is not a second process: the target is ovnkube-node", async () => {
  await withForkedOvnkube(async (parent) => {
    const found = await new SignalRestart().find();
    assert.ok('target' in found, JSON.stringify(found));
    assert.equal(found.target.describe, `pid ${parent}`);
  });
});

test('signal: the restart of a target that exited meanwhile says it is gone, and signals nothing', async () => {
  const child = spawn('/bin/sleep', ['600'], { stdio: 'ignore' });
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  const { startTimeOf } = await import('../../src/ovnkube/proc.js');
  const start = startTimeOf(readFileSync(`/proc/${child.pid}/stat`, 'utf8'));
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  await assert.rejects(
    new SignalRestart().restart({ id: `pid ${child.pid} start ${start}`, describe: `pid ${child.pid}` }),
    /is gone/,
  );
});
