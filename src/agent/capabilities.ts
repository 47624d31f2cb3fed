// What the agent's process may do, read once at start from /proc/self/status, so that
// the status says what is missing before the first replace fails. The replace's own
// EPERM stays the proof: a capability can be granted in another way (a user namespace
// owning the network namespace), and then this check only warns.
import { readFile } from 'node:fs/promises';

const CAP_NET_ADMIN = 12;

/** Warnings for what the process lacks; empty when it has it or /proc cannot tell. */
export async function missingCapabilities(statusFile = '/proc/self/status'): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(statusFile, 'utf8');
  } catch {
    return [];
  }
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(text);
  if (!m) return [];
  const effective = BigInt(`0x${m[1]}`);
  if ((effective >> BigInt(CAP_NET_ADMIN)) & 1n) return [];
  return [
    'CAP_NET_ADMIN is not in the effective capability set: the agent observes the routes but cannot replace them (grant NET_ADMIN: the DaemonSet or AmbientCapabilities=CAP_NET_ADMIN)',
  ];
}
