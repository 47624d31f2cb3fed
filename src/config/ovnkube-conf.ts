// ovnkube.conf (gcfg, ini-like), for the settings the agent falls back on when no
// flag gives them: [kubernetes] service-cidrs, [default] mtu, [gateway] next-hop
// and [gateway] mode (which the command line overrides; in 4.8 it always says local).
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { requireModule } from '../require.js';

const { parse } = requireModule('ini') as typeof import('ini');

/** A real ovnkube.conf is about 1 KiB; more is not one (and /dev/zero has no end). */
export const MAX_OVNKUBE_CONF_BYTES = 256 * 1024;

export interface OvnkubeConf {
  serviceCidrs: string[];
  mtu: number | null;
  nextHop: string[];
  mode: string | null;
  /** [gateway] v4-masquerade-subnet / v6-masquerade-subnet (4.10+), when set. */
  masqueradeSubnets: string[];
  /** [kubernetes] platform-type, which only the 4.10+ network operator renders (possibly ""); null when absent. */
  platformType: string | null;
}

function section(doc: Record<string, unknown>, name: string): Record<string, unknown> {
  const s = doc[name];
  return typeof s === 'object' && s !== null ? (s as Record<string, unknown>) : {};
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim().replace(/^"|"$/g, '') : null);
const list = (v: unknown): string[] => (str(v) ?? '').split(',').map((x) => x.trim()).filter(Boolean);

export function parseOvnkubeConf(text: string): OvnkubeConf {
  const doc = parse(text) as Record<string, unknown>;
  // The cluster MTU: routable-mtu when set, else mtu.
  const mtuText = str(section(doc, 'default')['routable-mtu']) ?? str(section(doc, 'default').mtu);
  const mtu = mtuText === null ? null : Number(mtuText);
  if (mtu !== null && (!Number.isInteger(mtu) || mtu < 68 || mtu > 65535)) {
    throw new Error(`[default] mtu or routable-mtu "${mtuText}" is not a valid MTU`);
  }
  return {
    serviceCidrs: list(section(doc, 'kubernetes')['service-cidrs']),
    mtu,
    nextHop: list(section(doc, 'gateway')['next-hop']),
    mode: str(section(doc, 'gateway').mode),
    masqueradeSubnets: [str(section(doc, 'gateway')['v4-masquerade-subnet']), str(section(doc, 'gateway')['v6-masquerade-subnet'])].filter((x): x is string => x !== null),
    platformType: typeof section(doc, 'kubernetes')['platform-type'] === 'string' ? (str(section(doc, 'kubernetes')['platform-type']) ?? '') : null,
  };
}

/**
 * Reads and parses ovnkube.conf. Opened non-blocking and refused unless a regular file
 * (a FIFO would hold a thread-pool worker forever), and read one byte past the limit.
 */
export async function readOvnkubeConf(file: string): Promise<OvnkubeConf> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!(await handle.stat()).isFile()) throw new Error('not a regular file');
    const buffer = Buffer.alloc(MAX_OVNKUBE_CONF_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > MAX_OVNKUBE_CONF_BYTES) throw new Error(`larger than ${MAX_OVNKUBE_CONF_BYTES} bytes`);
    return parseOvnkubeConf(buffer.subarray(0, bytesRead).toString('utf8'));
  } finally {
    await handle.close();
  }
}
