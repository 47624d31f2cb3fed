// Without CAP_NET_ADMIN: said at start, every replace refused by the kernel is retried
// with capped backoff, the agent stays up (no crash loop), no route changes, no restart
// is requested, and the status names what is missing.
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { missingCapabilities } from '../../src/agent/daemon.js';
import { CLI, FakeOvnkube, RHCOS_49_OS_RELEASE, Scratch, status } from '../helpers/agent.js';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import type { StatusReport } from '../../src/status/report.js';

test('missingCapabilities reads CapEff: NET_ADMIN (bit 12) present or not, and /proc unreadable says nothing', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-capstatus-'));
  const file = path.join(dir, 'status');
  try {
    writeFileSync(file, 'Name:\tnode\nCapEff:\t000001ffffffffff\n');
    assert.deepEqual(await missingCapabilities(file), []);
    writeFileSync(file, 'Name:\tnode\nCapEff:\t000001ffffffefff\n');
    assert.match((await missingCapabilities(file))[0]!, /^CAP_NET_ADMIN is not in the effective capability set/);
    assert.deepEqual(await missingCapabilities(path.join(dir, 'no-such-status')), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an agent without CAP_NET_ADMIN retries with capped backoff, stays up, changes nothing and says what is missing', async (t) => {
  if (skipWithoutKernel(t)) return;
  if (spawnSync('setpriv', ['--version']).error) {
    process.stderr.write(`SKIPPED (setpriv is not installed): ${t.name}\n`);
    return t.skip('setpriv is not installed');
  }
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  scratch.writeMode('local');
  ovnkube.start('local', { respawn: true });
  const child = spawn(
    'ip',
    [
      'netns',
      'exec',
      ns.name,
      'setpriv',
      '--bounding-set',
      '-net_admin',
      '--inh-caps',
      '-net_admin',
      process.execPath,
      CLI,
      'run',
      '--mode-file',
      scratch.modeFile,
      '--socket',
      scratch.socket,
      '--state-dir',
      scratch.stateDir,
      '--service-cidr',
      '10.96.0.0/16',
      '--mtu',
      '1400',
      '--restart',
      'signal',
      '--settle',
      '0',
      '--resync-interval',
      '2',
      '--os-release',
      RHCOS_49_OS_RELEASE,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    let last: StatusReport | undefined;
    // Three refused attempts: the backoff's first steps (about 1, 2, 4 s); the bound is a safety net.
    // The log lines come through a pipe and may trail the status: wait for both.
    const retries = () => [...output.matchAll(/"retryInMs":(\d+)/g)].length;
    for (let i = 0; i < 600 && !(last?.lastError && /attempt [3-9]/.test(last.lastError) && retries() >= 3); i++) {
      await new Promise((r) => setTimeout(r, 50));
      last = status(scratch.socket);
      if (child.exitCode !== null) break;
    }
    assert.equal(child.exitCode, null, `the agent exited:\n${output.slice(-3000)}`);
    assert.ok(last, 'a status');
    assert.match(
      last.lastError ?? '',
      /attempt [3-9], retrying in \d+ ms\): route replace 10\.96\.0\.0\/16 .*EPERM: operation not permitted \(the agent needs CAP_NET_ADMIN in the node network namespace\)/,
    );
    assert.ok(last.reasonCodes.includes('ReconcileFailed'));
    assert.ok(
      last.warnings.some((w) => w.startsWith('CAP_NET_ADMIN is not in the effective capability set')),
      JSON.stringify(last.warnings),
    );
    assert.equal(last.restart?.count, 0, 'no restart requested for a migration that could not start');
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
    assert.ok(!output.includes('"level":60'), 'nothing fatal logged');
    const delays = [...output.matchAll(/"retryInMs":(\d+)/g)].map((m) => Number(m[1]));
    assert.ok(delays.length >= 3 && delays.every((d) => d <= 60_000), `capped backoff: ${delays.join(', ')}`);
  } finally {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
});
