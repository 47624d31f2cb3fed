// OvnkubeScanner: when a repair may reuse the last /proc scan, on a fake /proc tree
// (directories, files and namespace symlinks as /proc shows them), every read seen.
import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { MAX_COPY_AGE_MS, MAX_REUSE_AGE_MS, OvnkubeScanner, summarise } from '../../src/ovnkube/proc.js';

const OWN_NET = 'net:[4026531840]';
const OVNKUBE_ARGV = ['/usr/bin/ovnkube', '--init-node', 'node1', '--gateway-mode', 'local'];

class FakeProc {
  readonly root = mkdtempSync(path.join(tmpdir(), 'gwmode-fakeproc-'));
  readonly reads: string[] = [];

  constructor() {
    mkdirSync(path.join(this.root, 'self', 'ns'), { recursive: true });
    symlinkSync(OWN_NET, path.join(this.root, 'self', 'ns', 'net'));
  }

  /** A process: comm is argv[0]'s name unless given; start is field 22 of stat, ppid field 4. */
  add(pid: number, argv: string[], start: number, comm = path.basename(argv[0]!), net = OWN_NET, ppid = 0): void {
    const dir = path.join(this.root, String(pid));
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(path.join(dir, 'ns'), { recursive: true });
    writeFileSync(path.join(dir, 'comm'), `${comm}\n`);
    writeFileSync(path.join(dir, 'cmdline'), argv.map((a) => `${a}\0`).join(''));
    // pid (comm) state, ppid (4), then fields 5..21, then starttime (22).
    writeFileSync(
      path.join(dir, 'stat'),
      `${pid} (${comm}) S ${ppid} ${Array.from({ length: 17 }, () => '0').join(' ')} ${start} 0 0\n`,
    );
    symlinkSync(net, path.join(dir, 'ns', 'net'));
  }

  /** /proc/uptime at `ticks` (USER_HZ, 100 per second) since boot. */
  uptime(ticks: number): void {
    writeFileSync(path.join(this.root, 'uptime'), `${(ticks / 100).toFixed(2)} 0.00\n`);
  }

  remove(pid: number): void {
    rmSync(path.join(this.root, String(pid)), { recursive: true, force: true });
  }

  /** The scanner's clock (ms); tests move it. */
  clock = 0;

  scanner(): OvnkubeScanner {
    return new OvnkubeScanner(
      this.root,
      (file) => {
        this.reads.push(path.relative(this.root, file));
        return readFileSync(file);
      },
      () => this.clock,
    );
  }

  /** What the next call reads. */
  readsOf(fn: () => void): string[] {
    const from = this.reads.length;
    fn();
    return this.reads.slice(from);
  }

  destroy(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

function withProc(fn: (proc: FakeProc) => void): void {
  const proc = new FakeProc();
  try {
    proc.add(1, ['/sbin/init'], 10);
    proc.add(2, ['/bin/bash', '-c', 'sleep 1'], 20);
    proc.add(100, OVNKUBE_ARGV, 1000);
    fn(proc);
  } finally {
    proc.destroy();
  }
}

const pids = (scanner: OvnkubeScanner, reuse: boolean) =>
  scanner.scan(reuse).processes.map((p) => `${p.pid}/${p.startTime}`);

test("scanner: a pass woken by a route event reuses the last scan, reading only the known ovnkube-node's stat and command line", () => {
  withProc((proc) => {
    const scanner = proc.scanner();
    assert.deepEqual(pids(scanner, false), ['100/1000']);
    const reads = proc.readsOf(() => assert.deepEqual(pids(scanner, true), ['100/1000']));
    assert.deepEqual(reads, ['100/stat', '100/cmdline']);
    assert.deepEqual(scanner.counts, { full: 1, reused: 1 });
  });
});

test('scanner: any other pass scans in full, even with nothing changed', () => {
  withProc((proc) => {
    const scanner = proc.scanner();
    pids(scanner, false);
    const reads = proc.readsOf(() => pids(scanner, false));
    assert.ok(reads.includes('1/comm') && reads.includes('2/comm') && reads.includes('100/cmdline'), reads.join(' '));
    assert.deepEqual(scanner.counts, { full: 2, reused: 0 });
  });
});

test('scanner: a process that was not in the last full scan has its comm read at every reuse; one whose comm says ovnkube makes a full scan that finds it', () => {
  withProc((proc) => {
    const scanner = proc.scanner();
    pids(scanner, false);
    proc.add(3, ['/bin/sleep', '5'], 30);
    assert.deepEqual(
      proc.readsOf(() => pids(scanner, true)),
      ['100/stat', '100/cmdline', '3/comm'],
    );
    assert.deepEqual(
      proc.readsOf(() => pids(scanner, true)),
      ['100/stat', '100/cmdline', '3/comm'],
      'read again: it may exec ovnkube',
    );
    proc.add(4, ['/usr/bin/ovnkube', '--init-node', 'node1', '--gateway-mode', 'shared'], 40);
    assert.deepEqual(pids(scanner, true), ['100/1000', '4/40']);
    assert.deepEqual(scanner.counts, { full: 2, reused: 2 });
  });
});

test('scanner: a new process seen as not ovnkube by one reuse that then execs ovnkube is found by the next', () => {
  withProc((proc) => {
    const scanner = proc.scanner();
    pids(scanner, false);
    proc.add(3, ['/bin/bash', '/usr/bin/ovnkube.sh'], 30, 'ovnkube.sh');
    assert.deepEqual(pids(scanner, true), ['100/1000']);
    proc.add(3, ['/usr/bin/ovnkube', '--init-node', 'node1', '--gateway-mode', 'shared'], 30);
    assert.deepEqual(pids(scanner, true), ['100/1000', '3/30']);
    assert.deepEqual(scanner.counts, { full: 2, reused: 1 });
  });
});

test("scanner: the known ovnkube-node exec'd ovnkube with another --gateway-mode (same comm and start time): a full scan reads the new mode", () => {
  withProc((proc) => {
    const scanner = proc.scanner();
    assert.equal(scanner.scan(false).processes[0]!.mode, 'local');
    proc.add(100, ['/usr/bin/ovnkube', '--init-node', 'node1', '--gateway-mode', 'shared'], 1000);
    assert.equal(scanner.scan(true).processes[0]!.mode, 'shared');
    assert.deepEqual(scanner.counts, { full: 2, reused: 0 });
  });
});

test('scanner: a PID of the full scan that is gone is forgotten, so an ovnkube that later takes its number is found', () => {
  withProc((proc) => {
    const scanner = proc.scanner();
    pids(scanner, false);
    proc.remove(2);
    assert.deepEqual(pids(scanner, true), ['100/1000']);
    proc.add(2, ['/usr/bin/ovnkube', '--init-node', 'node1', '--gateway-mode', 'shared'], 50);
    assert.deepEqual(pids(scanner, true).sort(), ['100/1000', '2/50']);
    assert.deepEqual(scanner.counts, { full: 2, reused: 1 });
  });
});

test(`scanner: a full scan older than ${MAX_REUSE_AGE_MS} ms is not reused`, () => {
  withProc((proc) => {
    const scanner = proc.scanner();
    pids(scanner, false);
    proc.clock += MAX_REUSE_AGE_MS;
    pids(scanner, true);
    assert.deepEqual(scanner.counts, { full: 1, reused: 1 });
    proc.clock += 1;
    pids(scanner, true);
    assert.deepEqual(scanner.counts, { full: 2, reused: 1 });
    pids(scanner, true);
    assert.deepEqual(scanner.counts, { full: 2, reused: 2 }, 'the age counts from the last full scan');
  });
});

test('scanner: the known ovnkube-node gone, its PID reused, an exec, or another namespace: a full scan', () => {
  const changes: Array<[string, (proc: FakeProc) => void, string[]]> = [
    ['gone', (proc) => proc.remove(100), []],
    ['PID reused (another start time)', (proc) => proc.add(100, OVNKUBE_ARGV, 1001), ['100/1001']],
    ['exec (comm changed)', (proc) => proc.add(100, ['/bin/sh'], 1000), []],
    [
      'moved to another network namespace',
      (proc) => proc.add(100, OVNKUBE_ARGV, 1000, 'ovnkube', 'net:[4026532000]'),
      [],
    ],
  ];
  for (const [what, change, found] of changes) {
    withProc((proc) => {
      const scanner = proc.scanner();
      pids(scanner, false);
      change(proc);
      assert.deepEqual(pids(scanner, true), found, what);
      assert.deepEqual(scanner.counts, { full: 2, reused: 0 }, what);
    });
  }
});

test('scanner: no reuse unless the last scan found exactly one ovnkube-node (none, or two that may disagree)', () => {
  withProc((proc) => {
    proc.remove(100);
    const scanner = proc.scanner();
    assert.deepEqual(pids(scanner, false), []);
    assert.deepEqual(pids(scanner, true), []);
    proc.add(100, OVNKUBE_ARGV, 1000);
    proc.add(101, OVNKUBE_ARGV, 1010);
    assert.deepEqual(pids(scanner, true), ['100/1000', '101/1010']);
    assert.deepEqual(pids(scanner, true), ['100/1000', '101/1010']);
    assert.deepEqual(scanner.counts, { full: 4, reused: 0 });
  });
});

// A fork of ovnkube-node not yet exec'd: same comm and command line, ovnkube-node its parent.
const COPY_AGE_TICKS = MAX_COPY_AGE_MS / 10;

test('scanner: a young fork of ovnkube-node with its command line is not a second one, in either PID order (a wrap puts it first)', () => {
  for (const pid of [150, 50]) {
    withProc((proc) => {
      proc.uptime(5000);
      proc.add(pid, OVNKUBE_ARGV, 5000 - COPY_AGE_TICKS, 'ovnkube', OWN_NET, 100);
      const scan = proc.scanner().scan(false);
      assert.deepEqual(
        scan.processes.map((p) => p.pid),
        [100],
        `fork ${pid}`,
      );
      assert.deepEqual(
        summarise(scan, null),
        { mode: 'local', pid: 100, id: 'pid 100 start 1000', detail: null, release410Plus: null, modes: ['local'] },
        `fork ${pid}`,
      );
    });
  }
});

test('scanner: what is not surely a young fork of ovnkube-node counts as a second process', () => {
  const OLD = 5000 - COPY_AGE_TICKS - 1;
  const cases: Array<[string, (proc: FakeProc) => void, string]> = [
    [
      'older than the limit (stuck before its exec, or ovnkube run again alike)',
      (proc) => proc.add(150, OVNKUBE_ARGV, OLD, 'ovnkube', OWN_NET, 100),
      `150/${OLD}`,
    ],
    [
      'another command line',
      (proc) => proc.add(150, [...OVNKUBE_ARGV, '--v=5'], 5000, 'ovnkube', OWN_NET, 100),
      '150/5000',
    ],
    ['another parent', (proc) => proc.add(150, OVNKUBE_ARGV, 5000, 'ovnkube', OWN_NET, 2), '150/5000'],
    ['its parent exited (reparented)', (proc) => proc.add(150, OVNKUBE_ARGV, 5000, 'ovnkube', OWN_NET, 1), '150/5000'],
    [
      '/proc/uptime unreadable',
      (proc) => {
        rmSync(path.join(proc.root, 'uptime'));
        proc.add(150, OVNKUBE_ARGV, 5000, 'ovnkube', OWN_NET, 100);
      },
      '150/5000',
    ],
  ];
  for (const [what, add, second] of cases) {
    withProc((proc) => {
      proc.uptime(5000);
      add(proc);
      assert.deepEqual(pids(proc.scanner(), false), ['100/1000', second], what);
    });
  }
});

test("scanner: a fork left out of a full scan is read again by a reuse: exec'ing an ovnkube of the other mode, it is found at once", () => {
  withProc((proc) => {
    proc.uptime(5000);
    proc.add(150, OVNKUBE_ARGV, 5000, 'ovnkube', OWN_NET, 100);
    const scanner = proc.scanner();
    assert.deepEqual(pids(scanner, false), ['100/1000']);
    // While it is still the same copy, a reuse reads its comm and scans in full, leaving it out again.
    assert.ok(proc.readsOf(() => assert.deepEqual(pids(scanner, true), ['100/1000'])).includes('150/comm'));
    // It execs ovnkube-node in the other mode: same comm, same start time.
    proc.add(
      150,
      ['/usr/bin/ovnkube', '--init-node', 'node1', '--gateway-mode', 'shared'],
      5000,
      'ovnkube',
      OWN_NET,
      100,
    );
    const scan = scanner.scan(true);
    assert.deepEqual(
      scan.processes.map((p) => `${p.pid} ${p.mode}`),
      ['100 local', '150 shared'],
    );
    assert.match(summarise(scan, null).detail ?? '', /^ovnkube processes disagree: /);
    assert.deepEqual(scanner.counts, { full: 3, reused: 0 });
  });
});
