// Reading the mode file, and watching it.
//
// A ConfigMap volume is a directory whose keys are symlinks through `..data`, which
// kubelet's atomic writer swaps to a new timestamped directory on each update.
// Watching the key file alone misses the last of several quick swaps, so the whole
// directory is watched, events are debounced, and the key is re-read and compared.
// The owner loop also re-reads on every periodic resync: a missed event costs at most
// one resync interval.
import { watch, type FSWatcher } from 'chokidar';
import { statSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import type { GatewayMode } from '../core/types.js';
import { MAX_MODE_FILE_BYTES, parseModeContent } from './parse.js';

export const CONFIGMAP_KEY = 'mode';

export type ModeRead = { mode: GatewayMode; error: null } | { mode: null; error: string };

/** Reads and parses the mode file (or the `mode` key of a ConfigMap volume directory). */
export async function readModeSource(source: string): Promise<ModeRead> {
  let file = source;
  try {
    if ((await stat(source)).isDirectory()) file = path.join(source, CONFIGMAP_KEY);
    const handle = await open(file, 'r');
    try {
      const info = await handle.stat();
      if (!info.isFile()) return { mode: null, error: `${file} is not a regular file` };
      // Read one byte past the limit rather than trusting the size from stat: the
      // file may grow between the two calls.
      const buffer = Buffer.alloc(MAX_MODE_FILE_BYTES + 1);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      if (bytesRead > MAX_MODE_FILE_BYTES) return { mode: null, error: `larger than ${MAX_MODE_FILE_BYTES} bytes` };
      const parsed = parseModeContent(buffer.subarray(0, bytesRead).toString('utf8'));
      return parsed.mode ? { mode: parsed.mode, error: null } : { mode: null, error: parsed.error! };
    } finally {
      await handle.close();
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') return { mode: null, error: `${file} does not exist` };
    return { mode: null, error: `cannot read ${file}: ${e.code ?? e.message}` };
  }
}

export interface ModeWatch {
  close(): Promise<void>;
}

/** Calls onChange (debounced) whenever anything under the mode file's location changes. */
export function watchModeSource(source: string, onChange: () => void, debounceMs = 200): ModeWatch {
  // A directory (ConfigMap volume) is watched itself, one level deep: its keys change
  // by the swap of the `..data` link inside it. A plain file is watched through its
  // directory, since editors and `kubectl cp` replace files by rename.
  const resolved = path.resolve(source);
  const isDir = (() => {
    try {
      return statSync(resolved).isDirectory();
    } catch {
      return false;
    }
  })();
  const target = isDir ? resolved : path.dirname(resolved);
  let timer: NodeJS.Timeout | undefined;
  const fire = () => {
    clearTimeout(timer);
    timer = setTimeout(onChange, debounceMs);
  };
  const watcher: FSWatcher = watch(target, {
    ignoreInitial: true,
    depth: isDir ? 1 : 0,
    followSymlinks: false,
    persistent: true,
    atomic: false,
  });
  watcher.on('all', (_event, changed) => {
    if (isDir || path.resolve(changed) === resolved) fire();
  });
  watcher.on('error', fire);
  return {
    close: async () => {
      clearTimeout(timer);
      await watcher.close();
    },
  };
}
