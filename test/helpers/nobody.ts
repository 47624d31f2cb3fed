// Runs a command as uid/gid 65534 with no supplementary groups (util-linux setpriv),
// to see what a caller without root meets. Switching users needs root.
//
// nobody must read the checkout to run the CLI (dist, node_modules, the addon,
// package.json), and a clone under a 0700 directory (root's home on Debian) is closed to
// it by that directory, whatever the checkout's own modes. So the command runs in a mount
// namespace of its own (unshare, private propagation: the host never sees the mount)
// where the checkout is bind-mounted on an empty 0755 directory under the temporary
// directory, and every path into the checkout in its argv is rewritten to that view.
// A bind mount rather than a copy: no list of what the CLI loads at run time to keep in
// step, nothing to copy, and nothing left mounted when a test dies. The checkout's own
// files keep their modes: nobody reads what a user cloning with umask 022 lets it read.
import { spawnSync, type SpawnSyncOptionsWithStringEncoding } from 'node:child_process';
import { chmodSync, mkdtempSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';

export const NOBODY = 65534;

/** The repository root (dist/test/helpers -> ../../..). */
const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '');

const skipReason: string | undefined = (() => {
  if (process.getuid?.() !== 0) return 'needs root to switch to uid 65534; run the suite as root, as CI does';
  for (const tool of ['setpriv', 'unshare']) {
    if (spawnSync(tool, ['--version']).error) return `${tool} (util-linux) is not installed`;
  }
  return undefined;
})();

/** Skips loudly, naming the test, when it cannot run here. Returns true when skipped. */
export function skipWithoutSetpriv(t: TestContext): boolean {
  if (!skipReason) return false;
  process.stderr.write(`SKIPPED (${skipReason}): ${t.name}\n`);
  t.skip(skipReason);
  return true;
}

let view: string | undefined;
/** The empty 0755 directory the checkout is mounted on, in the command's namespace only. */
function checkoutView(): string {
  if (view) return view;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-checkout-'));
  chmodSync(dir, 0o755);
  // Empty on the host (the mounts were the children's): removed with this process.
  process.once('exit', () => rmdirSync(dir));
  return (view = dir);
}

// $1 the checkout, $2 its view; the rest is the command. cd /: the caller's working
// directory may be the checkout, which nobody cannot reach by its own path.
const MOUNT_THEN_EXEC = 'mount --bind "$1" "$2" && cd / && shift 2 && exec "$@"';

/**
 * argv that runs args as nobody, the checkout readable at its view: a path into the
 * checkout anywhere in args (a file URL in a script included) is rewritten to it.
 * groups: setpriv's group options (default: none at all).
 */
export function asNobody(args: string[], groups: string[] = ['--clear-groups']): string[] {
  const at = checkoutView();
  const seen = args.map((a) => a.split(`${CHECKOUT}/`).join(`${at}/`));
  return [
    'unshare',
    '--mount',
    '--propagation',
    'private',
    'sh',
    '-c',
    MOUNT_THEN_EXEC,
    'sh',
    CHECKOUT,
    at,
    'setpriv',
    '--reuid',
    String(NOBODY),
    '--regid',
    String(NOBODY),
    ...groups,
    ...seen,
  ];
}

export function runAsNobody(
  args: string[],
  options: Partial<SpawnSyncOptionsWithStringEncoding> = {},
  groups?: string[],
) {
  const [command, ...rest] = asNobody(args, groups);
  const r = spawnSync(command!, rest, { encoding: 'utf8', timeout: 60_000, ...options });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
