// Reading the mode file, and watching it. A ConfigMap volume (a directory holding kubelet's
// atomic writer's `..data`, or one of its keys) is read as the cluster network operator reads
// gateway-mode-config (parse.ts, configMapMode); a volume without the `mode` key is shared, as
// on the cluster (an `optional` volume of a ConfigMap that does not exist has `..data` too:
// kubelet's first write of even an empty payload makes it; kubernetes
// pkg/volume/util/atomic_writer.go, Write, at 00e11024cf8c). A plain host file, or a directory
// without `..data`, has its own reading. A source not there at all is not read as anything: the
// agent waits for it (ModeNotRead). Whether a read may be taken: settled.ts.
import { watch } from 'chokidar';
import { constants, lstatSync, readlinkSync, realpathSync, statSync, type BigIntStats } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import path from 'node:path';
import type { GatewayMode } from '../core/types.js';
import { configMapMode, MAX_MODE_FILE_BYTES, parseModeContent, type ModeParse } from './parse.js';
import { nextFirstSeen, verdictOf, type FileStamp, type FirstSeen, type ReadFacts } from './settled.js';

export const CONFIGMAP_KEY = 'mode';

/** A mode (with why, where it is not the text at face value), or an error. */
export type ModeRead = { mode: GatewayMode; error: null; detail?: string } | { mode: null; error: string };
/** Not yet: the file is being written; read it again in retryInMs. */
export type ModePending = { pending: string; retryInMs: number };

const stampOf = (s: BigIntStats): FileStamp => ({
  key: `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`,
  mtimeMs: Number(s.mtimeNs / 1_000_000n),
});

/** The directory entry (a dangling symlink included), or null. */
const entry = (p: string) => lstat(p).catch(() => null);

/** A ConfigMap volume: `..data` a symlink to a directory (a dangling one is no volume to read as shared). */
const isVolume = async (dir: string) =>
  (await entry(path.join(dir, '..data')))?.isSymbolicLink() === true &&
  (await stat(path.join(dir, '..data')).catch(() => null))?.isDirectory() === true;

const asRead = (parsed: ModeParse): ModeRead =>
  parsed.mode
    ? { mode: parsed.mode, error: null, ...(parsed.detail && { detail: parsed.detail }) }
    : { mode: null, error: parsed.error };

/** A read, with what settled.ts needs to judge it. */
async function readModeFile(source: string): Promise<{ read: ModeRead; facts: ReadFacts }> {
  let file = source;
  const facts: ReadFacts = { atomic: false, stamp: null, changedDuringRead: false };
  const done = (read: ModeRead) => ({ read, facts });
  try {
    if ((await stat(source)).isDirectory()) file = path.join(source, CONFIGMAP_KEY);
    const configMap = await isVolume(path.dirname(file));
    // Non-blocking: opening a FIFO waits for a writer, holding a thread-pool worker for ever.
    const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const before = await handle.stat({ bigint: true });
      if (!before.isFile()) return done({ mode: null, error: `${file} is not a regular file` });
      // Written by kubelet's atomic writer: a key, a symlink beside `..data`.
      facts.atomic = configMap && (await lstat(file)).isSymbolicLink();
      // One byte past the limit, not the size from stat: the file may grow meanwhile.
      const buffer = Buffer.alloc(MAX_MODE_FILE_BYTES + 1);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      facts.stamp = stampOf(await handle.stat({ bigint: true }));
      facts.changedDuringRead = facts.stamp.key !== stampOf(before).key;
      if (bytesRead > MAX_MODE_FILE_BYTES)
        return done({ mode: null, error: `larger than ${MAX_MODE_FILE_BYTES} bytes` });
      const text = buffer.subarray(0, bytesRead).toString('utf8');
      return done(asRead(configMap ? configMapMode(text) : parseModeContent(text)));
    } finally {
      await handle.close();
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== 'ENOENT') return done({ mode: null, error: `cannot read ${file}: ${e.code ?? e.message}` });
    const dir = path.dirname(file);
    if (await isVolume(dir)) {
      facts.atomic = true;
      const detail = `no key "${path.basename(file)}" in the ConfigMap volume ${dir} (an optional ConfigMap that does not exist, or one without the key): shared, as the cluster network operator reads it`;
      return done({ mode: 'shared', error: null, detail });
    }
    // A directory with neither: say what it is (a dangling link is said as missing).
    if (file !== source && !(await entry(file)) && !(await entry(path.join(source, '..data'))))
      return done({
        mode: null,
        error: `${source} is a directory with no file "${CONFIGMAP_KEY}" and no ConfigMap volume (no ..data): expected one of the two`,
      });
    return done({ mode: null, error: `${file} does not exist` });
  }
}

/** Reads and parses the mode file (or the `mode` key of a ConfigMap volume directory), as it is now. */
export const readModeSource = async (source: string): Promise<ModeRead> => (await readModeFile(source)).read;

/** The running agent's reader: a read is taken only when settled.ts says so, else "pending", with when to look again. */
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
    const seenNow = this.monotonic();
    this.firstSeen = nextFirstSeen(this.firstSeen, facts.stamp, seenNow);
    const verdict = verdictOf(facts, this.firstSeen, this.now(), undefined, seenNow);
    return verdict.take ? read : { pending: verdict.why, retryInMs: verdict.retryInMs };
  }
}

export type ModeWatch = { close(): Promise<void> };

const isDirectory = (p: string) => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false; // missing, a loop (ELOOP), not a directory on the way (ENOTDIR), unreadable
  }
};

type Spot = [dir: string, entry: string | null];

const realpathOr = (p: string) => {
  try {
    return realpathSync(p);
  } catch {
    return p; // changed under us: the next event places the watch again
  }
};

/**
 * Where a change of the mode source shows (entry null: any), as real paths: the directory given (its
 * `..data` swap), else the file's directory or, until it exists, its nearest existing ancestor; and the
 * directory of each file a symlink leads to (`/etc/mode -> /srv/mode`; a volume key's `..<ts>/mode`).
 */
function placement(resolved: string): Spot[] {
  let [dir, name, file] = [resolved, null as string | null, path.join(resolved, CONFIGMAP_KEY)];
  if (!isDirectory(resolved)) [dir, name, file] = [path.dirname(resolved), path.basename(resolved), resolved];
  while (!isDirectory(dir)) [dir, name] = [path.dirname(dir), path.basename(dir)];
  const spots: Spot[] = [[realpathOr(dir), name]];
  // 40: the links Linux follows in one path before ELOOP.
  for (let i = 0; i < 40; i++) {
    try {
      const to = path.resolve(path.dirname(file), readlinkSync(file));
      const spot: Spot = [realpathSync(path.dirname(to)), path.basename(to)]; // throws: the chain ends here
      spots.push(spot);
      file = path.join(spot[0], path.basename(to));
    } catch {
      break; // not a symlink, or it leads nowhere (yet)
    }
  }
  return spots;
}

/** A directory the watch moves to is watched once chokidar has read it: a look then sees a change before that. */
const MOVE_LOOK_MS = 1000;

/**
 * Calls onChange when the kernel reports a change where the mode source may have changed, or one
 * made while the watch was being put in place. One chokidar watcher, on the directories only (all in them `ignored`; a change
 * comes as its `raw` event, the inotify event, none throttled away): chokidar 5 watches each file it
 * does not ignore, and one removed just as the watcher closes makes it call _remove, then add(), which
 * opens it again with an fs.watch no one closes (handler.js _handleFile, index.js _remove; issue 32).
 * A change that moves the spots (a directory appeared, a link pointed elsewhere, kubelet's `..data`
 * swap) moves the watch (unwatch, add), calls onChange, and again MOVE_LOOK_MS later; resyncs read too.
 */
export function watchModeSource(source: string, onChange: () => void): ModeWatch & { ready: Promise<void> } {
  const resolved = path.resolve(source);
  let spots = placement(resolved);
  let dirs = new Set(spots.map(([dir]) => dir));
  let closed = false;
  let look: NodeJS.Timeout | undefined;
  // What changed while chokidar read the directories is told once it is ready; nothing, nothing told.
  const stamp = () =>
    spots
      .flatMap(([d, n]) => (n === null ? [d, path.join(d, CONFIGMAP_KEY)] : [path.join(d, n)]))
      .map((p) => {
        try {
          const st = lstatSync(p);
          return `${st.ino}:${st.ctimeMs}`;
        } catch {
          return '-';
        }
      })
      .join();
  let before = stamp();
  const ignored = (p: string) => !dirs.has(p);
  const watcher = watch([...dirs], { ignored, depth: 0, followSymlinks: false, atomic: false });
  const move = (now: Spot[]) => {
    const next = new Set(now.map(([dir]) => dir));
    const added = [...next].filter((dir) => !dirs.has(dir));
    watcher.unwatch([...dirs].filter((dir) => !next.has(dir)));
    [spots, dirs] = [now, next];
    before = stamp();
    // unwatch() ignores all below a directory until it is added again: add the ancestors too (`ignored`).
    const above = (d: string): string[] => (d === path.dirname(d) ? [] : [d, ...above(path.dirname(d))]);
    watcher.add([...new Set([...added, ...added.flatMap((d) => above(path.dirname(d))).filter(ignored)])]);
    clearTimeout(look);
    look = setTimeout(() => closed || onChange(), MOVE_LOOK_MS);
  };
  const changed = (dir?: string, name?: string | null) => {
    if (closed) return;
    const now = placement(resolved);
    if (JSON.stringify(now) !== JSON.stringify(spots)) move(now);
    else if (dir && !spots.some(([d, n]) => d === dir && (n === null || !name || n === name))) return;
    onChange();
  };
  watcher.on('raw', (_event, name, details) => changed((details as { watchedPath: string }).watchedPath, name));
  watcher.on('error', () => changed());
  let settle: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (settle = resolve));
  watcher.once('ready', () => {
    if (stamp() !== before || JSON.stringify(placement(resolved)) !== JSON.stringify(spots)) changed();
    settle();
  });
  return {
    ready,
    // In a task of its own, not amid chokidar's promise chains (a watch being made there is dropped).
    close: () => {
      closed = true;
      clearTimeout(look);
      settle();
      return new Promise((resolve) => setImmediate(() => resolve(watcher.close())));
    },
  };
}
