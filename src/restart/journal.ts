// The restart journal, in the state directory. A restart is written here, and synced
// to disk, before it is requested: an agent that dies between the two and comes back
// sees the entry and never restarts ovnkube-node twice for the same migration.
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { GatewayMode } from '../core/types.js';

export interface RestartRecord {
  /** The migration this restart belongs to: the desired mode the routes were moved to. */
  mode: GatewayMode;
  at: number;
  target: string;
  result: 'requested' | 'stopped' | 'failed';
  error: string | null;
}

export interface JournalData {
  restarts: RestartRecord[];
}

const FILE = 'restart-journal.json';
const KEEP = 50;

export class Journal {
  constructor(private readonly dir: string) {}

  private get file(): string {
    return path.join(this.dir, FILE);
  }

  async load(): Promise<JournalData> {
    try {
      const data = JSON.parse(await readFile(this.file, 'utf8')) as JournalData;
      return Array.isArray(data.restarts) ? data : { restarts: [] };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { restarts: [] };
      throw Object.assign(new Error(`restart journal ${this.file} is unreadable: ${(err as Error).message}`), { cause: err });
    }
  }

  /** Writes atomically (temporary file, fsync, rename, fsync of the directory). */
  async save(data: JournalData): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o750 });
    const tmp = `${this.file}.tmp`;
    const trimmed: JournalData = { restarts: data.restarts.slice(-KEEP) };
    const handle = await open(tmp, 'w', 0o640);
    try {
      await handle.writeFile(JSON.stringify(trimmed, null, 2) + '\n');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.file);
    const dir = await open(this.dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}
