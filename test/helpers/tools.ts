// Tests that need a tool a bare machine may lack (.ci/run installs it) are skipped
// loudly, by name, where the tool is not on PATH.
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';

export interface Tool {
  /** Why tests needing the tool cannot run here, or undefined when they can. */
  readonly skipReason: string | undefined;
  /** Skips a test loudly, naming it, when the tool is missing. Returns true when skipped. */
  skipWithout(t: TestContext): boolean;
}

/** `binary` looked up on PATH once; `install` says how to get it (e.g. "apt-get install prometheus"). */
export function tool(binary: string, install: string): Tool {
  const skipReason =
    spawnSync('sh', ['-c', `command -v ${binary}`]).status === 0
      ? undefined
      : `${binary} is not installed (${install}; .ci/run does)`;
  return {
    skipReason,
    skipWithout(t) {
      if (!skipReason) return false;
      process.stderr.write(`SKIPPED (${skipReason}): ${t.name}\n`);
      t.skip(skipReason);
      return true;
    },
  };
}
