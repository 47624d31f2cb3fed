// Ending a child process the demo (or a benchmark) started: SIGTERM, as kubelet and systemd
// stop the agent, and wait for it to exit, so that what it holds is released before teardown.
import type { ChildProcess } from 'node:child_process';

export async function terminate(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
