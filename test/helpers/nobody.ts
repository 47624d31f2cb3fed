// Runs a command as uid/gid 65534 with no supplementary groups (util-linux setpriv),
// to see what a caller without root meets. Switching users needs root.
import { spawnSync, type SpawnSyncOptionsWithStringEncoding } from 'node:child_process';
import type { TestContext } from 'node:test';

export const NOBODY = 65534;

const skipReason: string | undefined = (() => {
  if (process.getuid?.() !== 0) return 'needs root to switch to uid 65534; run the suite as root, as CI does';
  if (spawnSync('setpriv', ['--version']).error) return 'setpriv (util-linux) is not installed';
  return undefined;
})();

/** Skips loudly, naming the test, when it cannot run here. Returns true when skipped. */
export function skipWithoutSetpriv(t: TestContext): boolean {
  if (!skipReason) return false;
  process.stderr.write(`SKIPPED (${skipReason}): ${t.name}\n`);
  t.skip(skipReason);
  return true;
}

/** argv prefix that runs the rest as nobody. */
export const AS_NOBODY = ['setpriv', '--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups'];

export function runAsNobody(args: string[], options: Partial<SpawnSyncOptionsWithStringEncoding> = {}) {
  const r = spawnSync(AS_NOBODY[0]!, [...AS_NOBODY.slice(1), ...args], { encoding: 'utf8', timeout: 60_000, ...options });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
