// A stand-in for ovnkube-node, for the demo and the tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import type { Netns } from './netns.js';

/**
 * A stand-in for ovnkube-node: /bin/sh copied under the name `ovnkube`, so that
 * /proc/PID/cmdline reads `.../ovnkube -c <loop> ovnkube --init-node node1 --gateway-mode MODE`.
 */
export class FakeOvnkube {
  private child: ChildProcess | undefined;
  private readonly binary: string;

  constructor(private readonly ns: Netns, dir: string) {
    this.binary = path.join(dir, 'ovnkube');
    copyFileSync('/bin/sh', this.binary);
  }

  start(mode: string): void {
    this.stop();
    this.child = spawn(
      'ip',
      ['netns', 'exec', this.ns.name, this.binary, '-c', 'trap "exit 0" TERM; while :; do sleep 1; done', 'ovnkube', '--init-node', 'node1', '--gateway-mode', mode],
      { stdio: 'ignore' },
    );
  }

  stop(): void {
    this.child?.kill('SIGKILL');
    this.child = undefined;
  }
}

