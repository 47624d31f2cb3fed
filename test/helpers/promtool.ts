// promtool (Debian's `prometheus` package) checks expositions and unit-tests alert
// rules; without it those tests are skipped loudly, by name.
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { tool } from './tools.js';

const promtool = tool('promtool', 'apt-get install prometheus');
export const skipWithoutPromtool = (t: TestContext): boolean => promtool.skipWithout(t);

/** `promtool check metrics` on an exposition: its exit code and what it said. */
export function checkMetrics(exposition: string): { code: number | null; output: string } {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, output: r.stdout + r.stderr };
}
