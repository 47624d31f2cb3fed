// The migration journal, in the state directory. A migration (with the restart it
// owes) is written here, and synced to disk, before the first route is replaced, and
// again before the restart is requested: an agent that dies anywhere in between comes
// back to the entry, finishes the migration and never restarts ovnkube-node twice.
//
// Writes are atomic: a temporary file, fsync, rename, fsync of the directory (and of
// its parent when the directory had to be created). A journal that cannot be parsed
// is moved aside and reported, never a crash loop.
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { Migration } from '../core/migration.js';

export interface JournalData {
  version: 2;
  /** The latest migration the agent started; null before the first. */
  migration: Migration | null;
  /** When restarts were requested (ms since epoch), for the rate limit. */
  restarts: number[];
}

export const EMPTY_JOURNAL: JournalData = { version: 2, migration: null, restarts: [] };

export class JournalError extends Error {
  readonly code = 'ERR_GWMODE_JOURNAL';
}

const FILE = 'migration-journal.json';
const KEEP_RESTARTS = 50;

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
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
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return EMPTY_JOURNAL;
      throw new JournalError(`journal ${this.file} is unreadable: ${(err as Error).message}`, { cause: err });
    }
    try {
      const data = JSON.parse(text) as Partial<JournalData>;
      if (data.version !== 2 || !Array.isArray(data.restarts) || typeof data.migration !== 'object') throw new Error('not a version 2 journal');
      return { version: 2, migration: data.migration ?? null, restarts: data.restarts.filter((t) => typeof t === 'number') };
    } catch (err) {
      throw new JournalError(`journal ${this.file} is corrupt: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Moves an unreadable journal aside (kept for the operator) and returns where. */
  async setAside(now: number): Promise<string> {
    const aside = `${this.file}.corrupt-${now}`;
    await rename(this.file, aside);
    return aside;
  }

  async save(data: JournalData): Promise<void> {
    const created = await mkdir(this.dir, { recursive: true, mode: 0o750 });
    const tmp = `${this.file}.tmp`;
    const trimmed: JournalData = { ...data, restarts: data.restarts.slice(-KEEP_RESTARTS) };
    const handle = await open(tmp, 'w', 0o640);
    try {
      await handle.writeFile(JSON.stringify(trimmed, null, 2) + '\n');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.file);
    await syncDir(this.dir);
    if (created !== undefined) await syncDir(path.dirname(created));
  }
}
