// Tests of what does not depend on the Node.js that runs the suite run once per CI run. The
// image ships its own Node.js 24, the .deb and the npm tarball are built and installed the same
// way whatever runs the suite, and the version matrix and the real OVN drive the agent's logic on
// the kernel. .ci/run sets GWMODE_SUITE_REPEAT=1 for its second runtime, where these skip loudly,
// by name, keeping the whole run well under 20 minutes.
import type { TestContext } from 'node:test';

export const REPEAT_SKIP_REASON = 'runtime-independent: ran under the first runtime of this CI run (GWMODE_SUITE_REPEAT=1)';

/** Skips the test loudly on the suite's repeat under a second runtime. Returns true when skipped. */
export function skipOnRepeat(t: TestContext): boolean {
  if (process.env.GWMODE_SUITE_REPEAT !== '1') return false;
  process.stderr.write(`SKIPPED (${REPEAT_SKIP_REASON}): ${t.name}\n`);
  t.skip(REPEAT_SKIP_REASON);
  return true;
}
