// ovnkube-node from /proc, on the real kernel: a stand-in ovnkube process owned by
// root, looked at by root and by uid 65534, whom the kernel's ptrace access check
// refuses /proc/PID/ns/net of another user's process.
import { strict as assert } from 'node:assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import {
  MAX_COPY_AGE_MS,
  OvnkubeScanner,
  scanOvnkubeProcesses,
  startTimeOf,
  summarise,
  type OvnkubeScan,
} from '../../src/ovnkube/proc.js';
import { CLI, FakeOvnkube, RHCOS_49_OS_RELEASE, Scratch } from '../helpers/agent.js';
import { withForkedOvnkube } from '../helpers/forked-ovnkube.js';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { asNobody, runAsNobody, skipWithoutSetpriv } from '../helpers/nobody.js';
import { IDLE } from '../../src/demo/fake-ovnkube.js';

const PROC = pathToFileURL(
  path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../src/ovnkube/proc.js'),
).href;
/**
 * The refusal as the detail gives it. Every root-owned ovnkube process on the machine
 * is closed to uid 65534, stand-ins of other test runs included: ours is one of them.
 */
const denied = (pid: number | string) =>
  new RegExp(
    `^cannot read the network namespace of ovnkube pids? (\\d+, )*${pid}(, \\d+)* \\(/proc/PID/ns/net: EACCES\\): the agent needs root or CAP_SYS_PTRACE$`,
  );

/** A root-owned stand-in ovnkube-node in this network namespace, for the length of fn; `flags` follow --gateway-mode local. */
async function withOvnkube(fn: (pid: number) => Promise<void>, flags: string[] = []): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-proc-'));
  const binary = path.join(dir, 'ovnkube');
  copyFileSync('/bin/sh', binary);
  chmodSync(binary, 0o755);
  const child = spawn(binary, ['-c', IDLE, 'ovnkube', '--init-node', 'node1', '--gateway-mode', 'local', ...flags], {
    stdio: 'ignore',
  });
  try {
    await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    await fn(child.pid!);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

test('proc: only a process whose comm is ovnkube has its command line read (reading cmdline takes the mmap lock, comm does not)', async () => {
  // A second stand-in whose argv[0] says ovnkube but whose executable (comm) does not: its
  // command line must not be read, and so it is not found.
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-proc-'));
  const other = path.join(dir, 'not-ovnkube');
  copyFileSync('/bin/sh', other);
  chmodSync(other, 0o755);
  const disguised = spawn(other, ['-c', IDLE, 'ovnkube', '--init-node', 'node1', '--gateway-mode', 'shared'], {
    stdio: 'ignore',
    argv0: '/usr/bin/ovnkube',
  });
  try {
    await new Promise((resolve, reject) => disguised.once('spawn', resolve).once('error', reject));
    assert.match(readFileSync(`/proc/${disguised.pid}/cmdline`, 'utf8'), /^\/usr\/bin\/ovnkube\0/);
    await withOvnkube(async (pid) => {
      const read: string[] = [];
      const scan = scanOvnkubeProcesses('/proc', (file) => {
        read.push(file);
        return readFileSync(file);
      });
      assert.equal(scan.processes.find((p) => p.pid === pid)?.mode, 'local', JSON.stringify(scan));
      assert.ok(!scan.processes.some((p) => p.pid === disguised.pid), JSON.stringify(scan));
      const cmdlines = read.filter((f) => f.endsWith('/cmdline'));
      assert.ok(cmdlines.includes(`/proc/${pid}/cmdline`), cmdlines.join(' '));
      for (const p of [process.pid, disguised.pid!]) {
        assert.ok(read.includes(`/proc/${p}/comm`), `comm of ${p} read`);
        assert.ok(!read.includes(`/proc/${p}/cmdline`), `cmdline of ${p} not read`);
      }
    });
  } finally {
    disguised.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test("proc: ovnkube-node's command line from CNO 4.10+ (--ovn-metrics-bind-address, --export-ovs-metrics) is 4.10+ evidence; 4.9's is none", async () => {
  const only = (scan: OvnkubeScan, pid: number): OvnkubeScan => ({
    processes: scan.processes.filter((p) => p.pid === pid),
    unreadable: [],
  });
  // CNO release-4.10 c7855f10e bindata/network/ovn-kubernetes/ovnkube-node.yaml:376-379.
  const cno410 = [
    '--metrics-bind-address',
    '127.0.0.1:29103',
    '--ovn-metrics-bind-address',
    '127.0.0.1:29105',
    '--metrics-enable-pprof',
    '--export-ovs-metrics',
    '--disable-snat-multiple-gws',
  ];
  await withOvnkube(async (pid) => {
    const seen = summarise(only(scanOvnkubeProcesses(), pid), null);
    assert.equal(seen.mode, 'local');
    assert.equal(seen.release410Plus, `--export-ovs-metrics (pid ${pid})`);
  }, cno410);
  await withOvnkube(
    async (pid) => {
      assert.equal(
        summarise(only(scanOvnkubeProcesses(), pid), null).release410Plus,
        `--ovn-metrics-bind-address (pid ${pid})`,
      );
    },
    ['-ovn-metrics-bind-address=127.0.0.1:29105'],
  );
  await withOvnkube(
    async (pid) => {
      const seen = summarise(only(scanOvnkubeProcesses(), pid), null);
      assert.equal(seen.mode, 'local');
      assert.equal(seen.release410Plus, null, 'CNO 4.9 renders neither flag');
    },
    ['--metrics-bind-address', '127.0.0.1:29103', '--metrics-enable-pprof'],
  );
});

test('proc: an ovnkube-node whose namespace cannot be read is named, with what is missing, not taken for absent', async (t) => {
  if (skipWithoutSetpriv(t)) return;
  await withOvnkube(async (pid) => {
    const asRoot = scanOvnkubeProcesses();
    assert.deepEqual(asRoot.unreadable, []);
    assert.deepEqual(asRoot.processes.find((p) => p.pid === pid)?.mode, 'local');

    const script = `const p = await import(${JSON.stringify(PROC)}); const scan = await p.scanOvnkubeProcesses(); console.log(JSON.stringify({ scan, summary: p.summarise(scan, null) }));`;
    const r = runAsNobody([process.execPath, '--input-type=module', '-e', script]);
    assert.equal(r.code, 0, r.stderr);
    const { scan, summary } = JSON.parse(r.stdout);
    assert.deepEqual(scan.processes, []);
    assert.ok(
      scan.unreadable.some((u: { pid: number; code: string }) => u.pid === pid && u.code === 'EACCES'),
      JSON.stringify(scan),
    );
    assert.equal(summary.mode, null);
    assert.equal(summary.pid, null);
    assert.match(summary.detail, denied(pid));
  });
});

test("proc: a fork of ovnkube-node that has not exec'd (same comm, same command line) is not a second ovnkube-node", async () => {
  await withForkedOvnkube(async (parent, child) => {
    const scan = scanOvnkubeProcesses();
    assert.ok(
      scan.processes.some((p) => p.pid === parent),
      JSON.stringify(scan),
    );
    assert.ok(!scan.processes.some((p) => p.pid === child), JSON.stringify(scan));
    // The scanner's full scan too, and the reuse that follows it.
    const scanner = new OvnkubeScanner('/proc', undefined, () => 0);
    for (const reuse of [false, true]) {
      const s = scanner.scan(reuse);
      assert.ok(
        s.processes.some((p) => p.pid === parent) && !s.processes.some((p) => p.pid === child),
        JSON.stringify(s),
      );
    }
  });
});

test(`proc: a fork of ovnkube-node older than ${MAX_COPY_AGE_MS} ms by /proc/uptime (stuck before its exec) counts as a second process`, async () => {
  await withForkedOvnkube(async (parent, child) => {
    const start = Number(startTimeOf(readFileSync(`/proc/${child}/stat`, 'utf8')));
    // /proc/uptime as it will read MAX_COPY_AGE_MS and one tick after the fork started.
    const later = Buffer.from(`${((start + MAX_COPY_AGE_MS / 10 + 1) / 100).toFixed(2)} 0.00\n`);
    const scan = scanOvnkubeProcesses('/proc', (file) => (file === '/proc/uptime' ? later : readFileSync(file)));
    assert.deepEqual(
      scan.processes
        .filter((p) => p.pid === parent || p.pid === child)
        .map((p) => p.pid)
        .sort(),
      [parent, child].sort(),
    );
  });
});

test('proc: a child ovnkube --init-node with another command line still counts, and the two disagree', async () => {
  await withForkedOvnkube(
    async (parent, child) => {
      const scan = scanOvnkubeProcesses();
      const ours = { processes: scan.processes.filter((p) => p.pid === parent || p.pid === child), unreadable: [] };
      assert.deepEqual(
        ours.processes.map((p) => [p.pid, p.mode]).sort(),
        [
          [parent, 'local'],
          [child, 'shared'],
        ].sort(),
      );
      const summary = summarise(ours, null);
      assert.equal(summary.mode, null);
      assert.match(summary.detail ?? '', /^ovnkube processes disagree: /);
      assert.deepEqual(summary.modes.sort(), ['local', 'shared'], 'both modes kept: either holds a change');
    },
    ['ovnkube', '--init-node', 'node1', '--gateway-mode', 'shared'],
  );
});

test('summarise: the mode of a process whose namespace cannot be read is kept, from its flag or else ovnkube.conf', () => {
  const unreadable = [
    { pid: 7, code: 'EACCES', modeFlag: 'shared', release410Plus: null },
    { pid: 8, code: 'EACCES', modeFlag: null, release410Plus: null },
    { pid: 9, code: 'EACCES', modeFlag: 'bogus', release410Plus: null },
  ];
  const summary = summarise({ processes: [], unreadable }, 'local');
  assert.deepEqual([summary.mode, summary.pid, summary.modes], [null, null, ['shared', 'local']]);
  assert.deepEqual(summarise({ processes: [], unreadable: [] }, 'local').modes, []);
});

test("plan as non-root says it cannot read ovnkube-node's namespace, and what it needs", async (t) => {
  if (skipWithoutKernel(t) || skipWithoutSetpriv(t)) return;
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  try {
    chmodSync(scratch.dir, 0o755);
    scratch.writeMode('local');
    ovnkube.start('local');
    const args = [
      'plan',
      '--mode-file',
      scratch.modeFile,
      '--service-cidr',
      '10.96.0.0/16',
      '--mtu',
      '1400',
      '--os-release',
      RHCOS_49_OS_RELEASE,
    ];
    const asRoot = spawnSync('ip', ['netns', 'exec', ns.name, process.execPath, CLI, ...args], { encoding: 'utf8' });
    assert.match(asRoot.stdout, /replace 10\.96\.0\.0\/16/, asRoot.stderr);
    // In a PID namespace of its own, with a stand-in started there as root: nobody cannot place
    // any root-owned ovnkube, and one of another test run (in shared mode, or with 4.10+ flags)
    // would change the answer. Once it has exec'd (its comm says ovnkube), nobody plans.
    const standIn = `"$0" -c "$1" ovnkube --init-node node1 --gateway-mode local & shift
      until [ "$(cat /proc/$!/comm)" = ovnkube ]; do sleep 0.01; done; exec "$@"`;
    const isolated = [
      'unshare',
      '--pid',
      '--fork',
      '--mount-proc',
      'sh',
      '-c',
      standIn,
      path.join(scratch.dir, 'ovnkube'),
      IDLE,
    ];
    const r = spawnSync('ip', ['netns', 'exec', ns.name, ...isolated, ...asNobody([process.execPath, CLI, ...args])], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^actions: none$/m);
    const reason = /^ {2}- ovnkube-node's gateway mode is unknown: (.*?)(?: \[\w+\])?$/m.exec(r.stdout);
    // Alone in its PID namespace: one pid, its own.
    assert.match(reason?.[1] ?? r.stdout, denied('\\d+'));
    assert.doesNotMatch(reason?.[1] ?? '', /pids/);
  } finally {
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
});

/**
 * The scanner's reuse on real processes. Its clock stands still, so that every reuse
 * below is within the age cap and what decides is what /proc shows; a second ovnkube in
 * this network namespace (another test run) only makes every scan a full one, and the
 * counts are checked only when ours is alone.
 */
class Reuse {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'gwmode-reuse-'));
  readonly binary = path.join(this.dir, 'ovnkube');
  readonly scanner = new OvnkubeScanner('/proc', undefined, () => 0);
  private readonly children: ChildProcess[] = [];
  alone = false;

  constructor() {
    copyFileSync('/bin/sh', this.binary);
    chmodSync(this.binary, 0o755);
  }

  /** A process running `script` under `binary` with argv; stdin is a pipe the script may read. */
  async start(binary: string, script: string, ...args: string[]): Promise<ChildProcess> {
    const child = spawn(binary, ['-c', script, ...args], { stdio: ['pipe', 'ignore', 'ignore'] });
    this.children.push(child);
    await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    return child;
  }

  /** A line on its stdin, then waits until /proc/PID/cmdline says `until`. */
  async release(child: ChildProcess, until: RegExp): Promise<void> {
    child.stdin!.write('go\n');
    for (let i = 0; i < 500 && !until.test(readFileSync(`/proc/${child.pid}/cmdline`, 'utf8')); i++)
      await new Promise((r) => setTimeout(r, 10));
    assert.match(readFileSync(`/proc/${child.pid}/cmdline`, 'utf8'), until);
  }

  /** Exec's an ovnkube stand-in running `mode` when released. */
  execOvnkube(mode: string): string {
    return `read x; exec ${this.binary} -c '${IDLE.replace(/'/g, "'\\''")}' ovnkube --init-node node1 --gateway-mode ${mode}`;
  }

  full(): OvnkubeScan {
    const scan = this.scanner.scan(false);
    this.alone = scan.processes.length === 1 && scan.unreadable.length === 0;
    return scan;
  }

  destroy(): void {
    for (const c of this.children) c.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const modeOf = (scan: OvnkubeScan, pid: number | undefined) => scan.processes.find((p) => p.pid === pid)?.mode;

test("proc reuse: a process started after the full scan, seen as not ovnkube by a repair pass, then exec'ing ovnkube beside the known one, is found by the next (real exec)", async () => {
  const r = new Reuse();
  try {
    const known = await r.start(r.binary, IDLE, 'ovnkube', '--init-node', 'node1', '--gateway-mode', 'local');
    assert.equal(modeOf(r.full(), known.pid), 'local');
    const wrapper = await r.start('/bin/sh', r.execOvnkube('shared'));
    assert.equal(modeOf(r.scanner.scan(true), wrapper.pid), undefined, 'not ovnkube yet');
    if (r.alone) assert.deepEqual(r.scanner.counts, { full: 1, reused: 1 });
    await r.release(wrapper, /--gateway-mode\0shared/);
    const scan = r.scanner.scan(true);
    assert.equal(modeOf(scan, wrapper.pid), 'shared', JSON.stringify(scan));
    assert.equal(modeOf(scan, known.pid), 'local');
    assert.match(summarise(scan, null).detail ?? '', /^ovnkube processes disagree/);
    if (r.alone) assert.deepEqual(r.scanner.counts, { full: 2, reused: 1 });
  } finally {
    r.destroy();
  }
});

test("proc reuse: the known ovnkube-node exec'ing ovnkube with another --gateway-mode (same comm, same start time) is read anew (real exec)", async () => {
  const r = new Reuse();
  try {
    const known = await r.start(
      r.binary,
      r.execOvnkube('shared'),
      'ovnkube',
      '--init-node',
      'node1',
      '--gateway-mode',
      'local',
    );
    assert.equal(modeOf(r.full(), known.pid), 'local');
    assert.equal(modeOf(r.scanner.scan(true), known.pid), 'local');
    if (r.alone) assert.deepEqual(r.scanner.counts, { full: 1, reused: 1 });
    await r.release(known, /--gateway-mode\0shared/);
    assert.equal(readFileSync(`/proc/${known.pid}/comm`, 'utf8'), 'ovnkube\n');
    assert.equal(modeOf(r.scanner.scan(true), known.pid), 'shared');
    if (r.alone) assert.deepEqual(r.scanner.counts, { full: 2, reused: 1 });
  } finally {
    r.destroy();
  }
});

test('proc reuse: a PID of the full scan that exited and is taken by an ovnkube is found (a real reused PID, through ns_last_pid)', async (t) => {
  const r = new Reuse();
  try {
    const known = await r.start(r.binary, IDLE, 'ovnkube', '--init-node', 'node1', '--gateway-mode', 'local');
    // The PID to reuse: a process of the full scan, gone before the next repair pass.
    const before = await r.start('/bin/sh', 'read x');
    const pid = before.pid!;
    r.full();
    before.kill('SIGKILL');
    await new Promise((resolve) => before.once('exit', resolve));
    assert.equal(modeOf(r.scanner.scan(true), known.pid), 'local');
    let taker: ChildProcess | undefined;
    for (let i = 0; i < 200 && taker?.pid !== pid; i++) {
      taker?.kill('SIGKILL');
      try {
        writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
      } catch (err) {
        t.skip(`SKIPPED: cannot write /proc/sys/kernel/ns_last_pid to reuse a PID: ${(err as Error).message}`);
        return;
      }
      taker = await r.start(r.binary, IDLE, 'ovnkube', '--init-node', 'node1', '--gateway-mode', 'shared');
    }
    assert.equal(taker?.pid, pid, 'the PID was taken by another process at each try');
    const scan = r.scanner.scan(true);
    assert.equal(modeOf(scan, pid), 'shared', JSON.stringify(scan));
    if (r.alone) assert.deepEqual(r.scanner.counts, { full: 2, reused: 1 });
  } finally {
    r.destroy();
  }
});
