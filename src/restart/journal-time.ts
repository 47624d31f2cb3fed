// The journal's times between the agent (monotonic ms, src/clock.ts) and the disk (wall ms
// since epoch: what `status` and `rollback` show). On save every time is written as wall
// time with the offset (wall minus monotonic) of that moment, noted beside them with the boot id.
// On load:
//  1. Same boot: the noted offset turns them back exactly, whatever the wall clock did since
//     (the rate limit and the restart timeout keep their durations across an agent restart).
//  2. Another boot, or no note (an older agent's journal, or `apply`'s): the current offset,
//     as right as the wall clock is.
//  3. A time after now (written while the wall clock ran ahead) is taken as now: a restart
//     "in the future" would hold the rate limit, a settle window last until then.
//  4. Within one boot, a journal saved again keeps its noted offset while the wall clock has
//     not stepped (stableOffset), so its times read and write back exactly.
import { readFileSync } from 'node:fs';
import { mapTimes } from '../core/migration.js';
import type { JournalData } from './journal.js';

/** Two samples of wall minus monotonic differ by a millisecond or so; a clock step (NTP's, by hand) by far more. */
export const OFFSET_JITTER_MS = 50;

/** The offset to write with: the noted one while the wall clock has not stepped away from it (rule 4), else the current one. */
export function stableOffset(notedMs: number | null, currentMs: number): number {
  return notedMs !== null && Math.abs(currentMs - notedMs) <= OFFSET_JITTER_MS ? notedMs : currentMs;
}

/** The offset to read a loaded journal's times with (rules 1 and 2). */
export function loadOffset(data: JournalData, bootId: string | null, currentOffsetMs: number): number {
  return bootId !== null && data.clock?.bootId === bootId ? data.clock.wallMinusMonotonicMs : currentOffsetMs;
}

/** Every time of the journal shifted by delta ms, and none after `latest`. */
function shift(data: JournalData, delta: number, latest = Infinity): JournalData {
  const t = (x: number) => Math.min(latest, x + delta);
  return { ...data, migration: data.migration && mapTimes(data.migration, t), restarts: data.restarts.map(t) };
}

/** A loaded journal (wall times) in monotonic time, read with `offsetMs` (see loadOffset); none after `nowMs` (rule 3). */
export function toMonotonic(data: JournalData, offsetMs: number, nowMs: number): JournalData {
  const { clock: _note, ...rest } = shift(data, -offsetMs, nowMs);
  return rest;
}

/** The agent's journal (monotonic times) as written to disk, with its note. */
export function toWall(data: JournalData, offsetMs: number, bootId: string | null): JournalData {
  const { clock: _note, ...rest } = shift(data, offsetMs);
  return bootId === null ? rest : { ...rest, clock: { bootId, wallMinusMonotonicMs: offsetMs } };
}

/** This boot's id (/proc/sys/kernel/random/boot_id), or null where it cannot be read. */
export function readBootId(file = '/proc/sys/kernel/random/boot_id'): string | null {
  try {
    return readFileSync(file, 'utf8').trim() || null;
  } catch {
    return null;
  }
}
