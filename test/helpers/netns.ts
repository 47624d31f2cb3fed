// Kernel tests need root and `ip netns`; elsewhere they are skipped loudly, by name.
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';

export { Netns, seedNode, type SeedNodeOptions } from '../../src/demo/netns.js';

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
