// The journal's times between the agent (monotonic ms, src/clock.ts) and the disk (wall
// ms since epoch: what `status` and `rollback` show).
//
// On save every time is written as wall time with the offset (wall minus monotonic) of
// that moment, and the offset is written beside them with the boot id. On load:
//  1. Same boot: the stored offset turns them back exactly, whatever the wall clock did
//     since (an NTP step between two agents moves nothing: the rate limit and the
//     restart timeout keep their durations across an agent restart).
//  2. Another boot, or no note (a journal of an older agent, or one only `apply` wrote):
//     monotonic times of another boot mean nothing, and the wall clock is the only
//     bridge. The current offset is used: as right as the wall clock is.
//  3. A time after now (the journal written while the wall clock ran ahead, read in
//     another boot after NTP set it right) is taken as now: a restart "in the future"
//     would hold the rate limit, and a settle window from the future would last until
//     then (30 days of Progressing for a clock 30 days ahead). As now, the rate limit
//     counts it as just done, and a settle window ends its full duration from now.
//  4. Within one boot, a journal saved again keeps the offset it was noted with while the
//     wall clock has not stepped (see stableOffset): its times read and write back exactly.
import { readFileSync } from 'node:fs';
import { mapTimes } from '../core/migration.js';
import type { JournalData } from './journal.js';

/**
 * Wall minus monotonic, sampled at two instants a fraction of a millisecond apart, differs by a
 * millisecond or so between two readings with no step of the wall clock between them. A note
 * within this much of the current offset is kept (rule 4): without it, a journal read and written
 * again moved every time by that jitter (a migration's startedAt off by 1 ms after the agent
 * saved the journal `apply` wrote). A real step (NTP's, a date set by hand) is far larger.
 */
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
