// Reading the mode file, and watching it.
//
// A ConfigMap volume (a directory holding kubelet's atomic writer's `..data`, or one of its keys)
// is read as the cluster network operator reads gateway-mode-config (parse.ts, configMapMode); one
// without the `mode` key is shared, as on the cluster (an `optional` volume of a ConfigMap that does
// not exist has `..data` too: kubernetes pkg/volume/util/atomic_writer.go, Write, at 00e11024cf8c).
// A source not there at all is waited for (ModeNotRead), never guessed. A plain host file, or a
// directory without `..data`, keeps its own reading (a bare word, or a manifest).
//
// Every change is reported at once (no debounce: the owner loop coalesces wake-ups, and re-reads
// at each resync: a missed event costs at most one resync interval). Whether a read may be taken
// is settled.ts's rule.
import { watch, type FSWatcher } from 'chokidar';
import { constants, lstatSync, readlinkSync, realpathSync, statSync, type BigIntStats } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import path from 'node:path';
import type { GatewayMode } from '../core/types.js';
import { configMapMode, MAX_MODE_FILE_BYTES, parseModeContent, type ModeParse } from './parse.js';
import { nextFirstSeen, verdictOf, type FileStamp, type FirstSeen, type ReadFacts } from './settled.js';

export const CONFIGMAP_KEY = 'mode';
/** The last change reported is reported once more this much later: past chokidar's 50 ms throttle of a file's changes. */
export const TRAILING_MS = 60;

/** A mode (with why, where it is not the text at face value), or an error. */
export type ModeRead = { mode: GatewayMode; error: null; detail?: string } | { mode: null; error: string };
/** Not yet: the file is being written; read it again in retryInMs. */
export type ModePending = { pending: string; retryInMs: number };

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

/** Whether a directory entry is there, a dangling symlink included. */
const exists = (p: string): Promise<boolean> => lstat(p).then(Boolean, () => false);

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
      // A key of a volume: a symlink beside `..data`, its content whole before the swap.
      facts.atomic = configMap && (await lstat(file)).isSymbolicLink();
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
export const readModeSource = async (source: string): Promise<ModeRead> => (await readModeFile(source)).read;

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

export type ModeWatch = { close(): Promise<void> };

const isDirectory = (p: string): boolean => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

const WATCH = { ignoreInitial: true, followSymlinks: false, atomic: false };

/**
 * Where to watch `file`: a directory (a ConfigMap volume) itself, one level deep, as its keys change by
 * the swap of `..data` in it (a key's own watch missed the last of quick swaps); a file in its directory,
 * as editors and `kubectl cp` replace files by rename; under a missing directory, its nearest ancestor.
 */
function placement(resolved: string): { target: string; kind: 'dir' | 'file' | 'ancestor' } {
  if (isDirectory(resolved)) return { target: resolved, kind: 'dir' };
  let target = path.dirname(resolved);
  if (isDirectory(target)) return { target, kind: 'file' };
  while (!isDirectory(target)) target = path.dirname(target);
  return { target, kind: 'ancestor' };
}

/**
 * Where a mode file that is a symlink leads (one link followed; null for no link): its target
 * replaced by rename there (`/etc/mode -> /srv/mode`) changes nothing in the link's directory.
 * Read from the link's real directory, as the kernel does, into the target's real directory
 * where there is one (a ConfigMap key's: the one kubelet removes after each swap of `..data`).
 */
function linkTarget(file: string): string | null {
  try {
    if (!lstatSync(file).isSymbolicLink()) return null;
    const to = path.resolve(realpathSync(path.dirname(file)), readlinkSync(file));
    const dir = path.dirname(to);
    return path.join(isDirectory(dir) ? realpathSync(dir) : dir, path.basename(to));
  } catch {
    return null;
  }
}

/**
 * Calls fire on a change of `file` (of anything in it, for a directory) where placement puts
 * its watch, and moves it down (or up) when a directory on the way comes (or goes). `moved`: fire once
 * in place, for what changed before. A watcher is closed only once ready: chokidar 5 closed
 * while it scans, as a file there goes, can watch the path again and leak an inotify handle.
 */
function watchPath(file: string, fire: () => void, retire: (closing: Promise<void>) => void, moved: boolean) {
  const onPath = (p: string) => p === file || file.startsWith(p + path.sep);
  let closed = false;
  let current: { watcher: FSWatcher; close: () => Promise<void> };
  let placed: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (placed = resolve));
  const arm = (moved: boolean) => {
    const { target, kind } = placement(file);
    const watcher: FSWatcher = watch(target, { ...WATCH, depth: kind === 'dir' ? 1 : 0 });
    const up = new Promise<void>((resolve) => watcher.once('ready', resolve));
    let scanned = false;
    const stillPlaced = () => {
      const now = placement(file);
      return now.target === target && now.kind === kind;
    };
    const move = () => {
      if (closed || watcher !== current.watcher) return;
      retire(current.close());
      arm(true);
    };
    // Nothing before ready: chokidar 5 reports the symlinks of its initial scan despite ignoreInitial.
    // The file gone: its directory may have gone with it, and one made again in its place
    // (`rm -rf /srv; mkdir /srv`, the same inode maybe) is not the one watched: place anew.
    watcher.on('all', (event, changed) => {
      if (!scanned || watcher !== current.watcher) return;
      const p = path.resolve(changed);
      if (kind === 'dir' || p === file) fire();
      if ((p === file && event.startsWith('unlink')) || (onPath(p) && !stillPlaced())) move();
    });
    // What appeared while the watch was starting is in its initial scan, which
    // ignoreInitial hides: look again once it is ready, and after a move re-read.
    watcher.once('ready', () => {
      scanned = true;
      if (!stillPlaced()) return move();
      if (watcher === current.watcher) placed();
      if (moved) fire();
    });
    watcher.on('error', fire);
    current = { watcher, close: () => up.then(() => watcher.close()) };
  };
  arm(moved);
  return { file, ready, close: () => ((closed = true), placed(), current.close()) };
}

/**
 * Calls onChange, at once, whenever anything under the mode file's location changes.
 * `ready` settles once the watch is in place (the initial scan of its watcher done where
 * the source now is), or it is closed: a change before that may go unseen.
 */
export function watchModeSource(source: string, onChange: () => void): ModeWatch & { ready: Promise<void> } {
  // The source is watched, and so is its target if it is a symlink (linkTarget): followed as it changes.
  const resolved = path.resolve(source);
  let closed = false;
  const retired = new Set<Promise<void>>();
  const retire = (closing: Promise<void>) => {
    const done = () => retired.delete(closing);
    retired.add(closing);
    void closing.then(done, done);
  };
  // chokidar passes on one change of a file per 50 ms (its throttle) and drops the rest:
  // a second write within that window would go unseen until the resync when the first
  // read was taken at once (an old mtime: `cp -p`, `rsync -t`; a volume swapped twice).
  // So the last change is reported once more TRAILING_MS later (one timer, set again at
  // each change): that read sees whatever a dropped change wrote.
  let trailing: NodeJS.Timeout | undefined;
  const fire = () => {
    if (closed) return;
    follow();
    onChange();
    clearTimeout(trailing);
    trailing = setTimeout(() => {
      trailing = undefined;
      if (!closed) onChange();
    }, TRAILING_MS);
  };
  const watchTarget = (target: string | null, moved: boolean) =>
    target === null ? null : watchPath(target, fire, retire, moved);
  let linked = watchTarget(linkTarget(resolved), false);
  const follow = () => {
    const target = linkTarget(resolved);
    if (closed || target === (linked?.file ?? null)) return;
    if (linked) retire(linked.close());
    linked = watchTarget(target, true);
  };
  const main = watchPath(resolved, fire, retire, false);
  return {
    ready: Promise.all([main.ready, linked?.ready]).then(() => undefined),
    close: async () => {
      closed = true;
      clearTimeout(trailing);
      await Promise.all([...retired, main.close(), linked?.close()]);
    },
  };
}
