// Node's compile cache (Node 22.1+; the container image ships Node 24, Node 20 has none)
// keeps the code compiled for our modules, so that the next process skips compiling them.
import { lstatSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';

/**
 * Where the cache may live: in the state directory, and only when that is the caller's
 * own and writable by no one else. A root daemon must not load code others could have
 * written, which Node's default, the shared temporary directory, would let them.
 * null: no cache (no such directory yet, or not safe).
 */
export function compileCacheDir(stateDir: string, uid: number | undefined): string | null {
  try {
    const dir = lstatSync(stateDir);
    return dir.isDirectory() && dir.uid === uid && (dir.mode & 0o022) === 0 ? path.join(stateDir, 'compile-cache') : null;
  } catch {
    return null;
  }
}

/** Turns the cache on where this Node has one and compileCacheDir allows it; returns the directory used. */
export function enableCompileCache(stateDir: string): string | null {
  const enable = (module as { enableCompileCache?: (dir: string) => unknown }).enableCompileCache;
  const dir = enable === undefined ? null : compileCacheDir(stateDir, process.getuid?.());
  if (dir !== null) enable!(dir);
  return dir;
}
