// A stand-in ovnkube-node holding a fork of itself that has not exec'd, for the tests of
// the /proc scan (test/ovnkube/proc.test.ts) and of the signal strategy.
import { strict as assert } from 'node:assert';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parentOf } from '../../src/ovnkube/proc.js';

/** Polls `look` until it gives a value; fails naming `what` after a generous bound (a safety net, not a speed check). */
async function until<T>(look: () => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = look();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`never happened within 30 s: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The PID of a process whose parent is `ppid`, from /proc, if there is one now. */
function childOf(ppid: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (parentOf(readFileSync(`/proc/${entry}/stat`, 'utf8')) === ppid) return Number(entry);
    } catch {
      // Gone.
    }
  }
  return undefined;
}

/**
 * A stand-in body that never forks: blocked reading a FIFO it holds open itself (made in
 * `dir`), exiting 0 on SIGTERM. The usual one (IDLE) starts `sleep 1 &` each second,
 * whose child is a copy of the stand-in until it execs.
 */
export function quietBody(dir: string): string {
  const fifo = path.join(dir, 'idle.fifo');
  execFileSync('mkfifo', [fifo]);
  return `trap 'exit 0' TERM; exec 3<>'${fifo}'; while :; do read -r _ <&3; done`;
}

/**
 * A stand-in ovnkube-node that holds a fork of itself that never execs: a subshell of
 * builtins only, blocked on a FIFO, which is what ovnkube-node's own children are
 * between their fork and their exec (same comm, same command line, same namespace).
 * With `args`, the child instead exec's the stand-in's binary again with those arguments
 * (a real child ovnkube, with another command line).
 */
export async function withForkedOvnkube(
  fn: (parent: number, child: number) => Promise<void>,
  args?: string[],
): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-fork-'));
  const binary = path.join(dir, 'ovnkube');
  copyFileSync('/bin/sh', binary);
  chmodSync(binary, 0o755);
  const block = quietBody(dir);
  const forked = args === undefined ? `( ${block} ) &` : `'${binary}' -c "${block}" ${args.join(' ')} &`;
  const parent = spawn(
    binary,
    ['-c', `${forked} ${block}`, 'ovnkube', '--init-node', 'node1', '--gateway-mode', 'local'],
    { stdio: 'ignore', detached: true },
  );
  try {
    await new Promise((resolve, reject) => parent.once('spawn', resolve).once('error', reject));
    const child = await until(() => childOf(parent.pid!), `a child of the stand-in ${parent.pid}`);
    if (args === undefined) {
      // What makes it a copy, checked rather than assumed.
      assert.equal(readFileSync(`/proc/${child}/comm`, 'utf8'), 'ovnkube\n');
      assert.deepEqual(readFileSync(`/proc/${child}/cmdline`), readFileSync(`/proc/${parent.pid}/cmdline`));
    } else {
      await until(
        () => (readFileSync(`/proc/${child}/cmdline`, 'utf8').includes(args.join('\0')) ? true : undefined),
        `the child ${child} exec'ing ${args.join(' ')}`,
      );
    }
    await fn(parent.pid!, child);
  } finally {
    if (parent.pid !== undefined) process.kill(-parent.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
