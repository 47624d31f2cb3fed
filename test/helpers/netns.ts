// The tests' network namespaces, the demo's with more. Kernel tests need root and `ip netns`;
// elsewhere they are skipped loudly, by name.
import { execFileSync, spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { Netns as DemoNetns, seedNode as seedDemoNode } from '../../src/demo/netns.js';

/** The demo's namespace (src/demo/netns.ts), with what tests and benchmarks do in it besides. */
export class Netns extends DemoNetns {
  constructor(existing?: string) {
    super(existing);
    if (existing) return;
    this.sysctl('net.ipv6.conf.all.accept_dad', '0');
    this.sysctl('net.ipv6.conf.default.accept_dad', '0');
  }

  exec(cmd: string, args: string[], input?: string): string {
    return execFileSync('ip', ['netns', 'exec', this.name, cmd, ...args], { encoding: 'utf8', input });
  }

  sysctl(key: string, value: string): void {
    this.exec('sysctl', ['-qw', `${key}=${value}`]);
  }

  /** `ip route show <prefix>` lines of the main table, trimmed. */
  routes(prefix: string, family: 4 | 6 = prefix.includes(':') ? 6 : 4): string[] {
    const lines = this.ip(`-${family} route show ${prefix}`).split('\n');
    return lines.map((l) => l.trim().replace(/\s+/g, ' ')).filter(Boolean);
  }

  /** Pipes commands to `ip -batch -` (one per line) inside the namespace. */
  batch(lines: string[]): void {
    execFileSync('ip', ['-n', this.name, '-batch', '-'], { input: lines.join('\n') + '\n', maxBuffer: 64 << 20 });
  }
}

export interface SeedNodeOptions {
  ipv6?: boolean;
  /** Also create ovn-k8s-gw0, which 4.8/4.9 local mode leaves on a node. */
  gw0?: boolean;
}

/** The demo's node (src/demo/netns.ts); with ipv6 the twins of its addresses and routes. */
export function seedNode(options: SeedNodeOptions = {}): Netns {
  const ns = new Netns();
  try {
    seedDemoNode(ns, options.gw0 ?? false);
    if (options.ipv6) {
      ns.ip('addr add fd00:172:18::2/64 dev br-ex nodad');
      ns.ip('-6 route add default via fd00:172:18::1 dev br-ex');
      ns.ip('addr add fd00:10:244:1::2/64 dev ovn-k8s-mp0 nodad');
      ns.ip('-6 route add fd00:10:96::/112 via fd00:172:18::1 dev br-ex mtu 1400');
    }
  } catch (err) {
    ns.destroy();
    throw err;
  }
  return ns;
}

/** Why kernel tests cannot run here, or undefined when they can. */
export const kernelSkipReason: string | undefined = (() => {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces); run the suite as root, as CI does';
  const probe = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (probe.status !== 0) return `"ip netns" does not work here: ${probe.stderr.trim()}`;
  return undefined;
})();

/** Skips a kernel test loudly, naming it, when it cannot run. Returns true when skipped. */
export function skipWithoutKernel(t: TestContext): boolean {
  if (!kernelSkipReason) return false;
  process.stderr.write(`SKIPPED (${kernelSkipReason}): ${t.name}\n`);
  t.skip(kernelSkipReason);
  return true;
}
