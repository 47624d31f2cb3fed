// A stand-in ovnkube-node holding a fork of itself that has not exec'd, for the tests of
// the /proc scan (test/ovnkube/proc.test.ts) and of the signal strategy.
import { strict as assert } from 'node:assert';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The PID of a process whose parent is `ppid`, from /proc, once there is one: a bounded number of looks. */
async function childOf(ppid: number): Promise<number> {
  for (let look = 0; look < 5000; look++) {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        if (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] === String(ppid)) return Number(entry);
      } catch {
        // Gone.
      }
    }
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`no child of ${ppid}`);
}

/**
 * A stand-in ovnkube-node that holds a fork of itself that never execs: a subshell of
 * builtins only, blocked on a FIFO, which is what ovnkube-node's own children are
 * between their fork and their exec (same comm, same command line, same namespace).
 * With `args`, the child instead exec's the stand-in's binary again with those arguments
 * (a real child ovnkube, with another command line).
 */
export async function withForkedOvnkube(fn: (parent: number, child: number) => Promise<void>, args?: string[]): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-fork-'));
  const binary = path.join(dir, 'ovnkube');
  copyFileSync('/bin/sh', binary);
  chmodSync(binary, 0o755);
  const fifo = path.join(dir, 'idle.fifo');
  execFileSync('mkfifo', [fifo]);
  const block = `exec 3<>'${fifo}'; while :; do read -r _ <&3; done`;
  const forked = args === undefined ? `( ${block} ) &` : `'${binary}' -c "${block}" ${args.join(' ')} &`;
  const parent = spawn(binary, ['-c', `${forked} ${block}`, 'ovnkube', '--init-node', 'node1', '--gateway-mode', 'local'], { stdio: 'ignore', detached: true });
  try {
    await new Promise((resolve, reject) => parent.once('spawn', resolve).once('error', reject));
    const child = await childOf(parent.pid!);
    if (args === undefined) {
      // What makes it a copy, checked rather than assumed.
      assert.equal(readFileSync(`/proc/${child}/comm`, 'utf8'), 'ovnkube\n');
      assert.deepEqual(readFileSync(`/proc/${child}/cmdline`), readFileSync(`/proc/${parent.pid}/cmdline`));
    } else {
      for (let look = 0; look < 5000 && !readFileSync(`/proc/${child}/cmdline`, 'utf8').includes(args.join('\0')); look++) await new Promise((r) => setImmediate(r));
    }
    await fn(parent.pid!, child);
  } finally {
    process.kill(-parent.pid!, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
