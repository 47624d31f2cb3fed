// The journal's times between the agent (monotonic ms, src/clock.ts) and the disk (wall ms since
// epoch, as `status` and `rollback` show them): saved as wall times with the offset (wall minus
// monotonic) of that moment, noted beside them with the boot id. On load:
//  1. Same boot: the noted offset turns them back exactly, whatever the wall clock did since
//     (the rate limit and the restart timeout keep their durations across an agent restart).
//  2. Another boot, or no note (an older agent's journal): the current offset.
//  3. A time after now (written while the wall clock ran ahead) is taken as now: a restart
//     "in the future" would hold the rate limit, a settle window last until then.
//  4. Saved again within one boot, the noted offset is kept while the wall clock has not stepped
//     (stableOffset), so the times read and write back exactly.
import { readFileSync } from 'node:fs';
import { mapTimes } from '../core/migration.js';
import type { JournalData } from './journal.js';

/** Two samples of wall minus monotonic differ by a millisecond or so; a clock step by far more. */
export const OFFSET_JITTER_MS = 50;

/** Rule 4. */
export const stableOffset = (notedMs: number | null, currentMs: number): number =>
  notedMs !== null && Math.abs(currentMs - notedMs) <= OFFSET_JITTER_MS ? notedMs : currentMs;

/** Rules 1 and 2. */
export const loadOffset = (data: JournalData, bootId: string | null, currentOffsetMs: number): number =>
  bootId !== null && data.clock?.bootId === bootId ? data.clock.wallMinusMonotonicMs : currentOffsetMs;

/** Every time shifted by delta ms, and none after `latest`; the note dropped. */
function shift({ clock: _note, ...data }: JournalData, delta: number, latest = Infinity): JournalData {
  const t = (x: number) => Math.min(latest, x + delta);
  return { ...data, migration: data.migration && mapTimes(data.migration, t), restarts: data.restarts.map(t) };
}

/** A loaded journal in monotonic time, read with `offsetMs` (loadOffset); none after `nowMs` (rule 3). */
export const toMonotonic = (data: JournalData, offsetMs: number, nowMs: number): JournalData =>
  shift(data, -offsetMs, nowMs);

/** The agent's journal as written to disk, with its note. */
export function toWall(data: JournalData, offsetMs: number, bootId: string | null): JournalData {
  const wall = shift(data, offsetMs);
  return bootId === null ? wall : { ...wall, clock: { bootId, wallMinusMonotonicMs: offsetMs } };
}

/** This boot's id, or null where it cannot be read. */
export function readBootId(file = '/proc/sys/kernel/random/boot_id'): string | null {
  try {
    return readFileSync(file, 'utf8').trim() || null;
  } catch {
    return null;
  }
}
