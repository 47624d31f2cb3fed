// Reading the mode file, and watching it.
//
// A ConfigMap volume (a directory holding kubelet's atomic writer's `..data`, or one of
// its keys) holds a ConfigMap's value, read as the cluster network operator reads
// gateway-mode-config (parse.ts, configMapMode): `mode` exactly "local" or "shared",
// anything else shared. A volume without the `mode` key is shared too, as on the cluster:
// a ConfigMap without the key, or an `optional: true` volume of a ConfigMap that does not
// exist (an empty directory, `..data` included: kubelet's first write of even an empty
// payload makes it; kubernetes pkg/volume/util/atomic_writer.go, Write, at 00e11024cf8c).
// A source that is not there at all (a volume not mounted yet, a host path made later) is
// not read as anything: the agent waits for it (ModeNotRead) rather than guess what it
// will be. A plain host file, or a directory without `..data`, keeps its own reading (a
// bare word, or a manifest).
//
// A ConfigMap volume is a directory whose keys are symlinks through `..data`, which
// kubelet's atomic writer swaps to a new timestamped directory on each update.
// Watching the key file alone misses the last of several quick swaps, so the whole
// directory is watched and every change is reported at once (no debounce: the owner
// loop coalesces wake-ups). Whether a read may be taken is settled.ts's rule: a
// ConfigMap volume at once, a plain file once nobody has written it for a moment.
// A mode file whose directory does not exist yet (a volume not mounted yet, a path
// made later) is watched through its nearest existing ancestor, one level at a time,
// until its directory appears. The owner loop also re-reads on every periodic resync:
// a missed event costs at most one resync interval.
import { constants, readlinkSync, realpathSync, statSync, watch, type BigIntStats, type FSWatcher } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import path from 'node:path';
import type { GatewayMode } from '../core/types.js';
import { configMapMode, MAX_MODE_FILE_BYTES, parseModeContent, type ModeParse } from './parse.js';
import { nextFirstSeen, verdictOf, type FileStamp, type FirstSeen, type ReadFacts } from './settled.js';

export const CONFIGMAP_KEY = 'mode';

/** A mode (with why, where it is not the text at face value), or an error. */
export type ModeRead = { mode: GatewayMode; error: null; detail?: string } | { mode: null; error: string };
/** Not yet: the file is being written; read it again in retryInMs. */
export interface ModePending {
  pending: string;
  retryInMs: number;
}

const stampOf = (s: BigIntStats): FileStamp => ({
  key: `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`,
  mtimeMs: Number(s.mtimeNs / 1_000_000n),
});

/**
 * Whether dir is a ConfigMap volume: it holds kubelet's atomic writer's `..data`, a symlink
 * to a directory, even when it has no key. A dangling one is no volume to read as shared.
 */
async function isVolume(dir: string): Promise<boolean> {
  const data = path.join(dir, '..data');
  try {
    return (await lstat(data)).isSymbolicLink() && (await stat(data)).isDirectory();
  } catch {
    return false;
  }
}

/** Whether `file` is a key of a ConfigMap volume: a symlink beside a `..data` symlink (kubelet's atomic writer). */
async function isVolumeKey(file: string): Promise<boolean> {
  try {
    return (await lstat(file)).isSymbolicLink() && (await isVolume(path.dirname(file)));
  } catch {
    return false;
  }
}

/** Whether a directory entry is there, a dangling symlink included. */
const exists = (p: string): Promise<boolean> =>
  lstat(p).then(
    () => true,
    () => false,
  );

const asRead = (parsed: ModeParse): ModeRead =>
  parsed.mode
    ? { mode: parsed.mode, error: null, ...(parsed.detail ? { detail: parsed.detail } : {}) }
    : { mode: null, error: parsed.error };

/** A read, with what settled.ts needs to judge it. */
async function readModeFile(source: string): Promise<{ read: ModeRead; facts: ReadFacts }> {
  let file = source;
  const facts: ReadFacts = { atomic: false, stamp: null, changedDuringRead: false };
  const done = (read: ModeRead) => ({ read, facts });
  try {
    if ((await stat(source)).isDirectory()) file = path.join(source, CONFIGMAP_KEY);
    // A ConfigMap's value: a key of a volume (the `mode` of a volume directory, or a key named itself).
    const configMap = await isVolume(path.dirname(file));
    // Non-blocking: opening a FIFO for reading waits for a writer, and that wait would
    // hold a thread-pool worker forever. fstat then refuses anything but a regular file.
    const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const before = await handle.stat({ bigint: true });
      if (!before.isFile()) return done({ mode: null, error: `${file} is not a regular file` });
      facts.atomic = await isVolumeKey(file);
      // Read one byte past the limit rather than trusting the size from stat: the
      // file may grow between the two calls.
      const buffer = Buffer.alloc(MAX_MODE_FILE_BYTES + 1);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      const after = stampOf(await handle.stat({ bigint: true }));
      facts.stamp = after;
      facts.changedDuringRead = after.key !== stampOf(before).key;
      if (bytesRead > MAX_MODE_FILE_BYTES)
        return done({ mode: null, error: `larger than ${MAX_MODE_FILE_BYTES} bytes` });
      const text = buffer.subarray(0, bytesRead).toString('utf8');
      return done(asRead(configMap ? configMapMode(text) : parseModeContent(text)));
    } finally {
      await handle.close();
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') {
      // A volume without the key: what CNO makes of a ConfigMap without it, or of none.
      if (await isVolume(path.dirname(file))) {
        facts.atomic = true;
        return done(
          asRead({
            mode: 'shared',
            detail: `no key "${path.basename(file)}" in the ConfigMap volume ${path.dirname(file)} (an optional ConfigMap that does not exist, or one without the key): shared, as the cluster network operator reads it`,
          }),
        );
      }
      // A directory given that holds neither a mode entry nor a ..data link: say what it is,
      // not only that a path the reader made up is missing. (A dangling link is said as missing.)
      if (file !== source && !(await exists(file)) && !(await exists(path.join(source, '..data')))) {
        return done({
          mode: null,
          error: `${source} is a directory with no file "${CONFIGMAP_KEY}" and no ConfigMap volume (no ..data): expected one of the two`,
        });
      }
      return done({ mode: null, error: `${file} does not exist` });
    }
    return done({ mode: null, error: `cannot read ${file}: ${e.code ?? e.message}` });
  }
}

/** Reads and parses the mode file (or the `mode` key of a ConfigMap volume directory), as it is now. */
export async function readModeSource(source: string): Promise<ModeRead> {
  return (await readModeFile(source)).read;
}

/**
 * The running agent's reader: a read is taken only when settled.ts says so, else it
 * answers "pending" with when to look again. It remembers one stamp between reads.
 */
export class ModeReader {
  private firstSeen: FirstSeen | null = null;

  /** `now`: wall time, compared with mtimes; `monotonic`: what "unchanged QUIET_MS apart" is measured on. */
  constructor(
    readonly source: string,
    private readonly now: () => number = Date.now,
    private readonly monotonic: () => number = now,
  ) {}

  async read(): Promise<ModeRead | ModePending> {
    const { read, facts } = await readModeFile(this.source);
    const now = this.now();
    const seenNow = this.monotonic();
    this.firstSeen = nextFirstSeen(this.firstSeen, facts.stamp, seenNow);
    const verdict = verdictOf(facts, this.firstSeen, now, undefined, seenNow);
    return verdict.take ? read : { pending: verdict.why, retryInMs: verdict.retryInMs };
  }
}

export interface ModeWatch {
  close(): Promise<void>;
}

const isDirectory = (p: string): boolean => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/**
 * Where a change of the mode source shows, as [directory, entry] (null: any entry): the
 * directory given (a ConfigMap volume, whose `..data` swap is in it), else the file's
 * directory or, until it exists, its nearest existing ancestor; and the directory of each
 * file a symlink leads to, through real paths (`/etc/mode -> /srv/mode` replaced by rename
 * in /srv; a volume key's `..<timestamp>/mode`), so a link pointed elsewhere moves the watch.
 */
function placement(resolved: string): Array<[string, string | null]> {
  const spots: Array<[string, string | null]> = [];
  let file = resolved;
  if (isDirectory(resolved)) {
    spots.push([resolved, null]);
    file = path.join(resolved, CONFIGMAP_KEY);
  } else {
    let [dir, name] = [path.dirname(resolved), path.basename(resolved)];
    while (!isDirectory(dir)) [dir, name] = [path.dirname(dir), path.basename(dir)];
    spots.push([dir, name]);
  }
  // 40: the links Linux follows in one path before ELOOP.
  for (let i = 0; i < 40; i++) {
    try {
      const to = path.resolve(path.dirname(file), readlinkSync(file));
      spots.push([realpathSync(path.dirname(to)), path.basename(to)]);
      file = path.join(...(spots.at(-1) as [string, string]));
    } catch {
      break; // not a symlink, or it leads nowhere (yet)
    }
  }
  return spots;
}

/**
 * Calls onChange, at once, whenever the kernel reports a change where the mode source may
 * have changed (inotify through fs.watch: every change, none throttled or merged away
 * after the last one). After a change that moves what is watched (a directory appeared,
 * a link was pointed elsewhere, kubelet swapped `..data`), the watch is moved first and
 * onChange called after, so a change made meanwhile is read. Not chokidar: its close()
 * during a watched file's removal could start it watching again, for ever (issue 32).
 */
export function watchModeSource(source: string, onChange: () => void): ModeWatch {
  const resolved = path.resolve(source);
  let spots: Array<[string, string | null]> = [];
  let watchers: FSWatcher[] = [];
  let closed = false;
  const changed = (dir: string, name: string | null) => {
    if (closed) return;
    const now = placement(resolved);
    if (JSON.stringify(now) !== JSON.stringify(spots)) place(now);
    else if (!spots.some(([d, n]) => d === dir && (n === null || name === null || n === name))) return;
    onChange();
  };
  const place = (now: Array<[string, string | null]>) => {
    for (const w of watchers) w.close();
    spots = now;
    watchers = [...new Set(now.map(([dir]) => dir))].flatMap((dir) => {
      try {
        const w = watch(dir, (_event, name) => changed(dir, name));
        // A directory that cannot be watched (gone meanwhile, inotify limits) is read at the next resync.
        return [w.on('error', () => changed(dir, null))];
      } catch {
        return [];
      }
    });
  };
  place(placement(resolved));
  return {
    close: () => {
      closed = true;
      for (const w of watchers) w.close();
      return Promise.resolve();
    },
  };
}
