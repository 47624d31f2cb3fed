// The migration journal, in the state directory: written and synced before the first replace and
// before the restart request, so an agent that dies in between finishes the migration and never
// restarts ovnkube-node twice. Writes are atomic (temporary file, fsync, rename, fsync of the
// directory and of a parent it had to make). One that cannot be parsed, or is not a regular file
// of at most MAX_JOURNAL_BYTES (src/read-regular.ts), is set aside and reported, never a crash loop.
// Version 3 stores src/core/migration.ts's state; version 2 is read into it or refused (docs/design.md).
import { constants } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { coded } from '../dataplane/errors.js';
import type { Migration } from '../core/migration.js';
import type { NextHop } from '../core/route.js';
import { parseCidr } from '../net/cidr.js';
import { readRegularFile } from '../read-regular.js';

export interface JournalData {
  version: 3;
  /** The latest migration the agent started; null before the first. */
  migration: Migration | null;
  /** When restarts were requested (ms since epoch on disk), for the rate limit. */
  restarts: number[];
  /** The boot the times were written in, and wall minus monotonic time then (journal-time.ts); absent from an older agent's. */
  clock?: { bootId: string; wallMinusMonotonicMs: number };
}

export const EMPTY_JOURNAL: JournalData = { version: 3, migration: null, restarts: [] };

export class JournalError extends coded('ERR_GWMODE_JOURNAL') {}

/** The journal could not be written (ENOSPC, EROFS: `errno`): the change it was to record must not be made. */
export class JournalWriteError extends Error {
  readonly code = 'ERR_GWMODE_JOURNAL_WRITE';
  readonly errno = (this.cause as NodeJS.ErrnoException).code ?? 'UNKNOWN';
  constructor(file: string, cause: unknown) {
    super(`cannot write the journal ${file}: ${(cause as Error).message}`, { cause });
  }
}

const FILE = 'migration-journal.json';
/** A new regular file or an error (EEXIST): no FIFO, device or symlink is ever opened for a write. */
export const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/** A journal holds one migration and at most KEEP_RESTARTS times: a few kB. */
export const MAX_JOURNAL_BYTES = 1024 * 1024;
const isTime = (t: unknown): t is number => typeof t === 'number' && Number.isFinite(t);
const orNull = (v: unknown, kind: 'number' | 'string') => v === null || typeof v === kind;
const hop = (n?: Partial<NextHop> | null) =>
  !!n &&
  [n.dev, n.gateway].every((v) => orNull(v, 'string')) &&
  [n.oif ?? null, n.mtu].every((v) => orNull(v, 'number'));
/** A recorded route: next hops of whole fields (an oif an older record lacks is looked up by dev), and a
 * key whose prefix parses in its family (else load() says why not). */
function wholeRoute(r: Partial<Migration['routes'][number]> | null): boolean {
  const { key, from, to } = r ?? {};
  if (!key || !Number.isInteger(key.table) || !Number.isInteger(key.priority) || !hop(from) || !hop(to)) return false;
  const cidr = typeof key.prefix === 'string' ? parseCidr(key.prefix) : null;
  return cidr?.family === key.family && cidr.text === key.prefix;
}

/** A whole migration state, or why not: a partial one could owe a restart nobody meant. */
function wholeMigration(m: Migration): boolean {
  const last = m.last as Migration['last'] | undefined;
  const rollback = m.rollback as Migration['rollback'] | undefined;
  return (
    (m.mode === 'local' || m.mode === 'shared') &&
    (m.identity === 'container' || m.identity === 'process') &&
    isTime(m.startedAt) &&
    typeof m.attempts === 'number' &&
    Array.isArray(m.routes) &&
    m.routes.every(wholeRoute) &&
    (m.ovnkubeBefore === null || typeof m.ovnkubeBefore === 'string') &&
    (last === null || (typeof last === 'object' && isTime(last.at) && typeof last.target?.id === 'string')) &&
    (rollback === null ||
      (typeof rollback === 'object' &&
        isTime(rollback.startedAt) &&
        (rollback.doneAt === null || isTime(rollback.doneAt)))) &&
    (m.restart === 'none' ||
      m.restart === 'owed' ||
      (m.restart === 'requested' && last !== null) ||
      (m.restart === 'failed' && last !== null && typeof last.error === 'string') ||
      (m.restart === 'done' && isTime(m.doneAt)))
  );
}

/** Version 2's flat record (restart: owed|requested|failed|done|none and loose fields) as a state. */
function fromVersion2(m: Record<string, unknown>): unknown {
  const { lastAttemptAt, stopped, stoppedAs, outcome, lastError, doneAt, rollback, ...rest } = m;
  const last = isTime(lastAttemptAt)
    ? {
        at: lastAttemptAt,
        // No id recorded (one cleared when --restart changed): it matches no ovnkube-node.
        target: { id: stopped ?? '', describe: stoppedAs ?? stopped ?? 'ovnkube-node' },
        result: outcome ?? null,
        error: lastError ?? (m.restart === 'failed' ? 'not recorded' : null),
      }
    : null;
  return { ...rest, last, rollback: rollback ?? null, ...(m.restart === 'done' ? { doneAt } : {}) };
}

/** A journal is trusted only whole. */
function validate(data: unknown): JournalData {
  const d = data as Partial<Omit<JournalData, 'version'>> & { version?: unknown };
  if (!d || (d.version !== 2 && d.version !== 3) || !Array.isArray(d.restarts) || !d.restarts.every(isTime))
    throw new Error('not a version 2 or 3 journal');
  let m = d.migration ?? null;
  if (m !== null && d.version === 2) m = fromVersion2(m as unknown as Record<string, unknown>) as Migration;
  if (m !== null && (typeof m !== 'object' || !wholeMigration(m))) throw new Error('its migration is incomplete');
  // A clock note that is not whole is dropped: the times are then read as plain wall times.
  const c = d.clock;
  const clock = typeof c?.bootId === 'string' && Number.isFinite(c.wallMinusMonotonicMs) ? { clock: c } : {};
  return { version: 3, migration: m, restarts: d.restarts, ...clock };
}
const KEEP_RESTARTS = 50;

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  await handle.sync().finally(() => handle.close());
}

export class Journal {
  constructor(readonly dir: string) {}

  get file(): string {
    return path.join(this.dir, FILE);
  }

  /** The journal, or EMPTY_JOURNAL when there is none; throws JournalError when it is unreadable. */
  async load(): Promise<JournalData> {
    let text: string;
    try {
      text = (await readRegularFile(this.file, MAX_JOURNAL_BYTES)).toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return EMPTY_JOURNAL;
      throw new JournalError(`journal ${this.file} is unreadable: ${(err as Error).message}`, { cause: err });
    }
    try {
      return validate(JSON.parse(text));
    } catch (err) {
      throw new JournalError(`journal ${this.file} is corrupt: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Moves an unreadable journal aside (kept for the operator) and returns where. */
  async setAside(now: number): Promise<string> {
    await rename(this.file, `${this.file}.corrupt-${now}`);
    return `${this.file}.corrupt-${now}`;
  }

  /** Throws JournalWriteError, leaving no temporary file behind (on a full disk it holds what space there was). */
  async save(data: JournalData): Promise<void> {
    const tmp = `${this.file}.tmp`;
    try {
      const created = await mkdir(this.dir, { recursive: true, mode: 0o750 });
      const trimmed: JournalData = { ...data, restarts: data.restarts.slice(-KEEP_RESTARTS) };
      // Made anew, never opened where it stands: a FIFO left at that path would block the open.
      await unlink(tmp).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
      const handle = await open(tmp, CREATE_NEW, 0o640);
      await handle
        .writeFile(JSON.stringify(trimmed, null, 2) + '\n')
        .then(() => handle.sync())
        .finally(() => handle.close());
      await rename(tmp, this.file);
      await syncDir(this.dir);
      if (created !== undefined) await syncDir(path.dirname(created));
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw new JournalWriteError(this.file, err);
    }
  }
}
