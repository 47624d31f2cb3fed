// Node's compile cache (module.enableCompileCache, Node 22.8+; the container image ships
// Node 24, Node 20 has none) keeps the code compiled for our modules, so that the next
// process skips compiling them.
import module from 'node:module';
import { requireModule } from '../require.js';

const { lstatSync, mkdirSync } = requireModule('node:fs') as typeof import('node:fs');
const path = requireModule('node:path') as typeof import('node:path');

/** Whether path is a directory itself (not a link to one), owned by uid, that neither group nor others may write. */
function ownClosedDirectory(dir: string, uid: number | undefined): boolean {
  const st = lstatSync(dir);
  return st.isDirectory() && st.uid === uid && (st.mode & 0o022) === 0;
}

/**
 * Where the cache may live: the `compile-cache` directory of the state directory, both
 * the caller's own and writable by no one else (the subdirectory is made 0700 when
 * missing). A root daemon must not load code others could have written, which Node's
 * default, the shared temporary directory, would let them, and nor would a link or an
 * open directory planted under the state directory before it was closed.
 * null: no cache (no state directory yet, or not safe).
 */
export function compileCacheDir(stateDir: string, uid: number | undefined): string | null {
  try {
    if (!ownClosedDirectory(stateDir, uid)) return null;
    const dir = path.join(stateDir, 'compile-cache');
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return null;
    }
    return ownClosedDirectory(dir, uid) ? dir : null;
  } catch {
    return null;
  }
}

/**
 * Where the cache is, by this environment: NODE_DISABLE_COMPILE_CACHE keeps it off;
 * NODE_COMPILE_CACHE is Node's own switch, acted on before any of our code runs (that
 * code itself came through it), so the agent takes it as the operator's choice, as it
 * takes NODE_OPTIONS, checks nothing there and adds no cache of its own.
 */
export function compileCachePlan(
  env: NodeJS.ProcessEnv,
): { kind: 'off' } | { kind: 'environment'; dir: string } | { kind: 'state-dir' } {
  if (env.NODE_DISABLE_COMPILE_CACHE) return { kind: 'off' };
  if (env.NODE_COMPILE_CACHE) return { kind: 'environment', dir: env.NODE_COMPILE_CACHE };
  return { kind: 'state-dir' };
}

/**
 * Turns the cache on where this Node has one, the environment leaves it to the agent, and
 * compileCacheDir allows it; returns the directory in use, if any.
 */
export function enableCompileCache(stateDir: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const plan = compileCachePlan(env);
  if (plan.kind === 'off') return null;
  if (plan.kind === 'environment')
    return (module as { getCompileCacheDir?: () => string | undefined }).getCompileCacheDir?.() ?? null;
  const enable = (module as { enableCompileCache?: (dir: string) => unknown }).enableCompileCache;
  const dir = enable === undefined ? null : compileCacheDir(stateDir, process.getuid?.());
  if (dir !== null) enable!(dir);
  return dir;
}
