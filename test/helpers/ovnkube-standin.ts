// The faithful ovnkube-node stand-in: a real executable named `ovnkube` (compiled once per
// test process from test/fixtures/ovnkube-standin.c) with CNO's argv for the release,
// running test/fixtures/ovnkube-standin.sh, which does on the kernel what that release's
// ovnkube-node does at start and every health-check period. It plays kubelet as
// FakeOvnkube does: with `respawn`, a process that exits (the agent's SIGTERM) is
// followed by a new one, and `starts` counts them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Netns } from './netns.js';
import { CLUSTER, ovnkubeArgv, ovnkubeConf, type Release } from './ovnkube-releases.js';

const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/', import.meta.url));
export const STANDIN_SCRIPT = path.join(FIXTURES, 'ovnkube-standin.sh');

let compiled: string | undefined;

/** The stand-in's binary, built on first use; removed when the test process exits. */
export function standinBinary(): string {
  if (compiled) return compiled;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-standin-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const binary = path.join(dir, 'ovnkube');
  const cc = spawnSync(
    'cc',
    ['-O2', '-Wall', '-Wextra', '-Werror', '-o', binary, path.join(FIXTURES, 'ovnkube-standin.c')],
    { encoding: 'utf8' },
  );
  if (cc.status !== 0) throw new Error(`building the ovnkube stand-in failed: ${cc.stderr}`);
  compiled = binary;
  return binary;
}

export interface StandinOptions {
  /** The health check's period in seconds (the real one's is 30). */
  healthPeriod?: number;
  /** 'old': the cluster's topology version is older than the release's (an upgrade window). */
  topology?: 'current' | 'old';
}

export class StandinOvnkube {
  private child: ChildProcess | undefined;
  /** How many processes were started. */
  starts = 0;
  /** The exit status of each process that exited, in order (null: killed by a signal). */
  readonly exits: Array<number | null> = [];
  /** Where the pod's /run/ovnkube-config is, under the stand-in's root. */
  readonly confPath: string;
  readonly logPath: string;
  private readonly root: string;

  constructor(
    private readonly ns: Netns,
    dir: string,
    readonly release: Release,
    private readonly options: StandinOptions = {},
  ) {
    this.root = path.join(dir, 'ovnkube-root');
    this.confPath = path.join(this.root, 'run', 'ovnkube-config', 'ovnkube.conf');
    this.logPath = path.join(dir, 'ovnkube.log');
    mkdirSync(path.dirname(this.confPath), { recursive: true });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts ovnkube-node in `mode`, with the ovnkube.conf CNO renders for it. */
  start(mode: 'local' | 'shared', opts: { respawn?: boolean } = {}): void {
    this.stop();
    writeFileSync(this.confPath, ovnkubeConf(this.release, mode));
    const argv = ovnkubeArgv(this.release, mode, standinBinary());
    const out = openSync(this.logPath, 'a');
    const child = spawn('ip', ['netns', 'exec', this.ns.name, ...argv], {
      stdio: ['ignore', out, out],
      env: {
        PATH: process.env.PATH,
        OVNKUBE_STANDIN_SCRIPT: STANDIN_SCRIPT,
        OVNKUBE_STANDIN_RELEASE: this.release,
        OVNKUBE_STANDIN_ROOT: this.root,
        OVNKUBE_STANDIN_HOST_SUBNET: CLUSTER.hostSubnet,
        OVNKUBE_STANDIN_HEALTH_PERIOD: String(this.options.healthPeriod ?? 30),
        OVNKUBE_STANDIN_TOPOLOGY: this.options.topology ?? 'current',
      },
    });
    closeSync(out);
    this.starts++;
    this.child = child;
    child.once('exit', (code) => this.exits.push(code));
    if (opts.respawn) {
      child.once('exit', () => {
        if (this.child === child) this.start(mode, opts);
      });
    }
  }

  stop(): void {
    const child = this.child;
    this.child = undefined;
    child?.kill('SIGKILL');
  }

  /** Everything the stand-ins wrote, in order. */
  log(): string {
    return existsSync(this.logPath) ? readFileSync(this.logPath, 'utf8') : '';
  }

  /** Waits until `count` processes have finished their start (a safety net bound, not a speed check). */
  async ready(count = this.starts): Promise<void> {
    for (let i = 0; i < 600; i++) {
      const log = this.log();
      const fatal = /^E\d{4} .*$/m.exec(log);
      if (fatal) throw new Error(`the ovnkube stand-in (${this.release}) failed: ${fatal[0]}\n${log}`);
      if ((log.match(/standin: started/g) ?? []).length >= count) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(
      `the ovnkube stand-in (${this.release}) never finished its start ${count}; its log:\n${this.log()}`,
    );
  }
}
