import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import type { Netns } from './netns.js';

/**
 * What the stand-in does while it runs: wait for SIGTERM and exit 0, at once. The shell
 * runs a trap only between commands: a `sleep` in the foreground would hold the exit (and
 * so the next ovnkube-node) back up to a second; `wait` returns as soon as a signal comes.
 */
export const IDLE = "trap 'kill $! 2>/dev/null; exit 0' TERM; while :; do sleep 1 & wait $!; done";

export interface FakeOptions {
  /** Play kubelet: when the process exits by itself (SIGTERM), start a new one. */
  respawn?: boolean;
  /** The shell body the process runs (default IDLE). */
  body?: string;
}

/**
 * A stand-in for ovnkube-node, for the demo and (counting its starts) the tests: /bin/sh copied under
 * the name `ovnkube`, so that /proc/PID/cmdline reads `.../ovnkube -c <body> ovnkube --init-node node1 --gateway-mode MODE`.
 */
export class FakeOvnkube {
  private child: ChildProcess | undefined;
  private readonly binary: string;

  constructor(
    private readonly ns: Netns,
    dir: string,
  ) {
    this.binary = path.join(dir, 'ovnkube');
    copyFileSync('/bin/sh', this.binary);
  }

  start(mode: string, options: FakeOptions = {}): void {
    this.stop();
    const argv = ['-c', options.body ?? IDLE, 'ovnkube', '--init-node', 'node1', '--gateway-mode', mode];
    const child = spawn('ip', ['netns', 'exec', this.ns.name, this.binary, ...argv], { stdio: 'ignore' });
    this.child = child;
    if (options.respawn) child.once('exit', () => this.child === child && this.start(mode, options));
  }

  stop(): void {
    const child = this.child;
    this.child = undefined;
    child?.kill('SIGKILL');
  }
}
