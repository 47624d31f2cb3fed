// promtool (Debian's `prometheus` package) checks expositions and unit-tests alert
// rules; without it those tests are skipped loudly, by name.
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';

export const promtoolSkipReason: string | undefined =
  spawnSync('sh', ['-c', 'command -v promtool']).status === 0 ? undefined : 'promtool is not installed (apt-get install prometheus; .ci/run does)';

export function skipWithoutPromtool(t: TestContext): boolean {
  if (!promtoolSkipReason) return false;
  process.stderr.write(`SKIPPED (${promtoolSkipReason}): ${t.name}\n`);
  t.skip(promtoolSkipReason);
  return true;
}

/** `promtool check metrics` on an exposition: its exit code and what it said. */
export function checkMetrics(exposition: string): { code: number | null; output: string } {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, output: r.stdout + r.stderr };
}
