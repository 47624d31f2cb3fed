// sd_notify through the native addon, against a real datagram receiver, and the whole
// READY / STATUS / WATCHDOG / RELOADING / STOPPING sequence of a running agent.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { addon } from '../../src/native/addon.js';
import { formatNotify, systemdNotifier, watchdogUsec } from '../../src/systemd/supervisor.js';
import { AgentProcess, curl, FakeOvnkube, FAULTY, Scratch, waitForStatus } from '../helpers/agent.js';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { NotifyReceiver } from '../helpers/notify-receiver.js';

test('sd_notify reaches a receiver on a filesystem path', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-notify-'));
  const receiver = new NotifyReceiver(path.join(dir, 'notify.sock'));
  try {
    await receiver.listening;
    systemdNotifier({ NOTIFY_SOCKET: receiver.address }).notify({ READY: '1', STATUS: 'two\nlines' });
    await receiver.waitFor((m) => m === 'READY=1\nSTATUS=two lines');
  } finally {
    receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sd_notify reaches a receiver on an abstract name written @name', async () => {
  const receiver = new NotifyReceiver(`@gwmode-test-${randomBytes(4).toString('hex')}`);
  try {
    await receiver.listening;
    assert.equal(addon.sdNotify(receiver.address, 'WATCHDOG=1'), 'WATCHDOG=1'.length);
    await receiver.waitFor((m) => m === 'WATCHDOG=1');
  } finally {
    receiver.close();
  }
});

test('sd_notify errors carry errno and code; an unset NOTIFY_SOCKET sends nothing', () => {
  assert.throws(
    () => addon.sdNotify('/nonexistent/notify.sock', 'READY=1'),
    (err: NodeJS.ErrnoException) => {
      assert.equal(err.code, 'ENOENT');
      assert.equal(err.errno, 2);
      assert.equal(err.syscall, 'sendto');
      return true;
    },
  );
  assert.throws(() => addon.sdNotify('relative.sock', 'READY=1'), { code: 'EINVAL' });
  const quiet = systemdNotifier({});
  assert.equal(quiet.enabled, false);
  quiet.notify({ READY: '1' });
  assert.equal(formatNotify({ STOPPING: '1', STATUS: 'bye' }), 'STOPPING=1\nSTATUS=bye');
});

test('the watchdog applies only when WATCHDOG_PID is unset or ours', () => {
  assert.equal(watchdogUsec({ WATCHDOG_USEC: '30000000' }, 10), 30_000_000);
  assert.equal(watchdogUsec({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '10' }, 10), 30_000_000);
  assert.equal(watchdogUsec({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '11' }, 10), undefined);
  assert.equal(watchdogUsec({}, 10), undefined);
});

test('a running agent tells systemd READY, STATUS, WATCHDOG, RELOADING and STOPPING, and a wedged loop stops the pings', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  const receiver = new NotifyReceiver(path.join(scratch.dir, 'notify.sock'));
  let agent: AgentProcess | undefined;
  try {
    await receiver.listening;
    ovnkube.start('local', { respawn: true });
    scratch.writeMode('local');
    // In Converged a stopped ovnkube-node, and after SIGUSR2 the wedged link dump, come with
    // the periodic resync: the shortest one allowed (1 s). A 1.5 s watchdog: pings every
    // 0.75 s, and only a pass held past 1.5 s is stuck (room for a slow pass on a busy machine).
    agent = new AgentProcess(
      ns,
      scratch,
      ['--service-cidr', '10.96.0.0/16', '--resync-interval', '1'],
      {
        NOTIFY_SOCKET: receiver.address,
        WATCHDOG_USEC: '1500000',
        GWMODE_FAULT: 'wedge-on-sigusr2',
      },
      FAULTY,
    );
    const ready = await receiver.waitFor((m) => m.startsWith('READY=1\n'), 0, 'READY=1');
    assert.match(receiver.messages[ready]!, /\nSTATUS=\w+ desired=local/);
    // STATUS= follows the agent as it moves on (the migration's restart, then Converged),
    // not only on a change of phase name.
    await receiver.waitFor((m) => /^STATUS=Converged desired=local/.test(m), ready, 'STATUS=Converged');
    // READY=1 comes after the socket listens and the first reconcile ended.
    assert.equal(curl(scratch.socket, '/readyz').code, 200);
    await receiver.waitFor((m) => m === 'WATCHDOG=1', ready, 'WATCHDOG=1');

    ovnkube.stop();
    await receiver.waitFor(
      (m) => /^STATUS=Waiting .*no ovnkube --init-node process/.test(m),
      ready,
      'STATUS on a phase change',
    );
    ovnkube.start('local');

    const mark = receiver.messages.length;
    process.kill(agent.child.pid!, 'SIGHUP');
    const reloading = await receiver.waitFor((m) => m.startsWith('RELOADING=1\n'), mark, 'RELOADING=1');
    assert.match(receiver.messages[reloading]!, /\nMONOTONIC_USEC=\d+/);
    await receiver.waitFor((m) => m.startsWith('READY=1'), reloading, 'READY=1 after the reload');

    const wedged = receiver.messages.length;
    process.kill(agent.child.pid!, 'SIGUSR2');
    const stuck = await receiver.waitFor(
      (m) => /^STATUS=Degraded: reconcile loop stuck/.test(m),
      wedged,
      'stuck status',
    );
    let third = stuck;
    for (let i = 0; i < 2; i++)
      third = await receiver.waitFor((m) => /^STATUS=Degraded: reconcile loop stuck/.test(m), third + 1, 'stuck again');
    assert.deepEqual(
      receiver.messages.slice(stuck, third + 1).filter((m) => m === 'WATCHDOG=1'),
      [],
    );
    assert.equal(curl(scratch.socket, '/healthz').code, 503);

    process.kill(agent.child.pid!, 'SIGTERM');
    assert.equal(await agent.exited, 0);
    await receiver.waitFor((m) => m.startsWith('STOPPING=1'), third, 'STOPPING=1');
    assert.equal(existsSync(scratch.socket), false);
  } finally {
    await agent?.stop();
    receiver.close();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
});

test('the unit file passes systemd-analyze verify', (t) => {
  const unit = path.resolve('systemd/ovn-gwmode-agent.service');
  const r = spawnSyncSafe('systemd-analyze', ['verify', unit]);
  if (r === undefined) {
    process.stderr.write(`SKIPPED (systemd-analyze not installed): ${t.name}\n`);
    t.skip('systemd-analyze not installed');
    return;
  }
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr.trim(), '');
});

function spawnSyncSafe(cmd: string, args: string[]) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.error ? undefined : r;
}

test('SIGHUP re-reads ovnkube.conf: a service CIDR added there is watched after the reload', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true, ipv6: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  const conf = path.join(scratch.dir, 'ovnkube.conf');
  const writeConf = (cidrs: string) =>
    writeFileSync(conf, `[default]\nmtu="1400"\n[kubernetes]\nservice-cidrs="${cidrs}"\n`);
  let agent: AgentProcess | undefined;
  try {
    writeConf('10.96.0.0/16');
    ovnkube.start('local', { respawn: true });
    scratch.writeMode('local');
    agent = new AgentProcess(ns, scratch, ['--ovnkube-config', conf]);
    let s = await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged on the IPv4 CIDR');
    assert.deepEqual(
      s.routes.map((r) => r.cidr),
      ['10.96.0.0/16'],
    );
    assert.match(ns.routes('fd00:10:96::/112')[0] ?? '', /dev br-ex/);

    writeConf('10.96.0.0/16,fd00:10:96::/112');
    process.kill(agent.child.pid!, 'SIGHUP');
    s = await waitForStatus(
      agent,
      (s) => s.phase === 'Converged' && s.routes.length === 2,
      'both CIDRs after the reload',
    );
    assert.match(ns.routes('fd00:10:96::/112')[0] ?? '', /^fd00:10:96::\/112 via fd00:10:244:1::1 dev ovn-k8s-mp0 /);
  } finally {
    await agent?.stop();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
});
