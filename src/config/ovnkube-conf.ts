// ovnkube.conf, read as ovnkube reads it (gcfg: see gcfg.ts), for the settings the agent
// falls back on when no flag gives them: [kubernetes] service-cidrs, [default] mtu,
// [gateway] next-hop and [gateway] mode (which the command line overrides; in 4.8 it
// always says local), and for what tells the platform's version: the masquerade subnets
// and [kubernetes] platform-type. A conf gcfg refuses is one ovnkube-node does not start
// with: an error here, never a guess.
import { readRegularFile } from '../read-regular.js';
import { foldName, gcfgInt, gcfgString, parseGcfg } from './gcfg.js';

/** A real ovnkube.conf is about 1 KiB; more is not one (and /dev/zero has no end). */
export const MAX_OVNKUBE_CONF_BYTES = 256 * 1024;

export interface OvnkubeConf {
  serviceCidrs: string[];
  mtu: number | null;
  nextHop: string[];
  mode: string | null;
  /** [gateway] v4-masquerade-subnet / v6-masquerade-subnet (4.10+), when set. */
  masqueradeSubnets: string[];
  /** [kubernetes] platform-type, which only CNO 4.10+ renders (possibly ""); null when absent. */
  platformType: string | null;
  /** Every `section.name` assigned outside subsections, names folded to lower case (see confHas). */
  keys: ReadonlySet<string>;
}

/** Whether ovnkube.conf assigns [section] name, its names in any case. */
export function confHas(conf: Pick<OvnkubeConf, 'keys'>, section: string, name: string): boolean {
  return conf.keys.has(`${foldName(section)}.${foldName(name)}`);
}

const nonEmpty = (v: string | null): string | null => (v === null || v === '' ? null : v);
const list = (v: string | null): string[] =>
  (v ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export function parseOvnkubeConf(text: string): OvnkubeConf {
  const doc = parseGcfg(text);
  // The cluster MTU: routable-mtu when set, else mtu (an int each, as ovnkube's fields).
  const routable = gcfgInt(doc, 'default', 'routable-mtu');
  const plain = gcfgInt(doc, 'default', 'mtu');
  const mtu = routable ?? plain;
  if (mtu !== null && (mtu < 68 || mtu > 65535)) {
    throw new Error(`[default] ${routable !== null ? 'routable-mtu' : 'mtu'} ${mtu} is not a valid MTU`);
  }
  return {
    serviceCidrs: list(gcfgString(doc, 'kubernetes', 'service-cidrs')),
    mtu,
    nextHop: list(gcfgString(doc, 'gateway', 'next-hop')),
    mode: nonEmpty(gcfgString(doc, 'gateway', 'mode')),
    masqueradeSubnets: [
      gcfgString(doc, 'gateway', 'v4-masquerade-subnet'),
      gcfgString(doc, 'gateway', 'v6-masquerade-subnet'),
    ]
      .map(nonEmpty)
      .filter((x): x is string => x !== null),
    platformType: gcfgString(doc, 'kubernetes', 'platform-type'),
    keys: new Set(doc.variables.filter((v) => v.subsection === null).map((v) => `${v.section}.${v.name}`)),
  };
}

/**
 * Reads and parses ovnkube.conf, as src/read-regular.ts reads (non-blocking, regular
 * files only, bounded). Bytes that are not UTF-8 are refused, as gcfg's scanner refuses them.
 */
export async function readOvnkubeConf(file: string): Promise<OvnkubeConf> {
  const bytes = await readRegularFile(file, MAX_OVNKUBE_CONF_BYTES);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new Error('illegal UTF-8 encoding');
  }
  return parseOvnkubeConf(text);
}
