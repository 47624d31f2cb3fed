// Which OpenShift release the node runs, from evidence on the node; pure (the shell reads the files).
// The agent acts only on 4.8/4.9, and a 4.10/4.11 node looks like one: from ovn-kubernetes 68cdb3891
// (Oct 2021) until 5701be2df (Aug 2022) the service route goes `via <br-ex default gateway> dev br-ex
// mtu <MTU>` in both modes and routingViaHost runs `--gateway-mode local`. The rules, in order:
//  1. Any 4.10+ evidence wins over everything, --layout included: routing-via-host, never a change.
//     - os-release's OPENSHIFT_VERSION 4.10 or later (RHCOS carries it, e.g. OPENSHIFT_VERSION="4.9"
//       RHEL_VERSION="8.4" VERSION="49.84.202212201621-0" ID="rhcos": stackrox/stackrox's
//       local-nodescanner README; "4.13" in ComplianceAsCode/content
//       linux_os/.../package_iptables_installed/tests/rhel9.notapplicable.sh);
//     - ovnkube.conf keys only a 4.10+ operator renders (CNO bindata/network/ovn-kubernetes/004-config.yaml):
//       `[kubernetes] platform-type` (877228e52, Dec 2021: always in release-4.10 c7855f1 and the
//       4.11 tree f1a70e47e, never in release-4.9 275ca80 nor release-4.8 f9c6825); the masquerade
//       subnet keys (later). (`[default] routable-mtu`, e5e36ad73, is rendered only during an MTU
//       migration: not looked at.)
//     - a service route via the gateway interface to a masquerade next hop (the .4);
//     - ovnkube-node's command line: `--export-ovs-metrics` or `--ovn-metrics-bind-address`
//       (src/ovnkube/proc.ts). The one that holds in an upgrade: CNO rolls out the 4.10 ovnkube-node
//       hours before the machine-config operator reboots the node into 4.10's RHCOS.
//  2. An RHCOS os-release with OPENSHIFT_VERSION 4.8 or 4.9: the legacy layout, acted on.
//  3. Otherwise only an operator's statement: --layout legacy acts, routing-via-host never does,
//     auto waits (LayoutUnknown). A leftover ovn-k8s-gw0 (its removal, ed422b840, is best effort)
//     and a service route via ovn-k8s-mp0 (upgrade windows) occur on 4.10 nodes: no evidence.
import type { Route } from './route.js';
import type { Layout, OsRelease, OvnkubeObservation, PlannerConfig, Release } from './types.js';

export type { ConfEvidence, OsRelease, Release } from './types.js';

export interface Platform {
  release: Release;
  /** What decided, or for 'unknown' what was looked at and found wanting. */
  evidence: string;
  layout: Layout;
}

/** The .4 of the default masquerade subnets: 169.254.169.0/29 (4.12-4.16), 169.254.0.0/17 (4.17+ installs), fd69::/125 and /112. */
const ROUTING_VIA_HOST_NEXTHOPS = ['169.254.169.4', '169.254.0.4', 'fd69::4'];

/** os-release(5): KEY=value lines, the value optionally in double or single quotes. */
export function parseOsRelease(text: string, path: string): OsRelease {
  const fields = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [, key, raw] = /^\s*([A-Z0-9_]+)=(.*)$/.exec(line) ?? [];
    if (key === undefined || raw === undefined) continue;
    let value = raw.trim();
    const q = value[0];
    if ((q === '"' || q === "'") && value.endsWith(q) && value.length >= 2) value = value.slice(1, -1);
    fields.set(key, value.replace(/\\(["'$`\\])/g, '$1'));
  }
  const get = (k: string) => (fields.get(k) ?? '') || null;
  return {
    path,
    id: get('ID'),
    openshiftVersion: get('OPENSHIFT_VERSION'),
    version: get('VERSION'),
    versionId: get('VERSION_ID'),
    error: null,
  };
}

const NO_FIELDS = { id: null, openshiftVersion: null, version: null, versionId: null };
export const noOsRelease = (path: string, error: string): OsRelease => ({ path, ...NO_FIELDS, error });

type MajorMinor = [number, number];
const versionOf =
  (re: RegExp) =>
  (text: string): MajorMinor | null => {
    const m = re.exec(text);
    return m ? [Number(m[1]), Number(m[2])] : null;
  };
/** Exactly "4.9" or "4.9.3": the only form the agent acts on. */
const strictVersionOf = versionOf(/^(\d{1,3})\.(\d{1,3})(?:\.\d+)?$/);
/** At the start, however it goes on ("4.10.0-rc.1", " 4.11.0-fc.3", "4.10.3-x86_64"). */
const looseVersionOf = versionOf(/^\s*"?(\d{1,3})\.(\d{1,3})/);
/** An RHCOS build, "410.84.202201251210-0": the OpenShift 4.x minor's digits, then RHEL's. */
const rhcosBuildVersionOf = versionOf(/^\s*(4)(\d{1,2})\.\d+\.\d+/);

const isRecent = ([major, minor]: MajorMinor) => major > 4 || (major === 4 && minor >= 10);

/**
 * Any field that says 4.10+, loosely read, is believed (it only turns changes off): OPENSHIFT_VERSION
 * of any OS, RHCOS's VERSION_ID and build VERSION. What lets the agent act, 4.8/4.9, must be RHCOS's
 * own OPENSHIFT_VERSION, exactly N.M or N.M.P.
 */
function osReleaseFinding(o: OsRelease): { release: Release; text: string } {
  if (o.error !== null) return { release: 'unknown', text: `${o.path}: ${o.error}` };
  const said = `${o.path}: ID=${o.id ?? '(none)'} OPENSHIFT_VERSION=${o.openshiftVersion ?? '(none)'}`;
  const rhcos = o.id === 'rhcos';
  const claims: Array<[string, string | null, (t: string) => MajorMinor | null]> = [
    ['OPENSHIFT_VERSION', o.openshiftVersion, looseVersionOf],
    ['VERSION_ID', rhcos ? o.versionId : null, looseVersionOf],
    ['VERSION', rhcos ? o.version : null, rhcosBuildVersionOf],
  ];
  for (const [field, value, read] of claims) {
    const v = value === null ? null : read(value);
    if (v && isRecent(v))
      return { release: '4.10+', text: field === 'OPENSHIFT_VERSION' ? said : `${said} ${field}=${value}` };
  }
  if (o.openshiftVersion === null)
    return { release: 'unknown', text: `${said} (no OpenShift version: not an RHCOS node)` };
  const v = strictVersionOf(o.openshiftVersion);
  if (v === null) return { release: 'unknown', text: `${said} (not a version the agent acts on)` };
  if (!rhcos) return { release: 'unknown', text: `${said} (not RHCOS)` };
  if (v[0] === 4 && (v[1] === 8 || v[1] === 9)) return { release: '4.8-4.9', text: said };
  return { release: 'unknown', text: `${said} (not a release the agent knows)` };
}

/** The release, the layout the agent works in, and what decided: see the rules above. */
export function identifyPlatform(
  config: PlannerConfig,
  serviceRoutes: Route[],
  ovnkube: Pick<OvnkubeObservation, 'release410Plus'>,
): Platform {
  const os = osReleaseFinding(config.osRelease);
  const onlyRecent = 'rendered by the 4.10+ network operator only';
  const recent: string[] = [];
  if (ovnkube.release410Plus !== null)
    recent.push(`ovnkube-node's command line has ${ovnkube.release410Plus}, ${onlyRecent}`);
  if (os.release === '4.10+') recent.push(os.text);
  const conf = config.confEvidence;
  if (conf && conf.keys.length > 0) recent.push(`${conf.path} has ${conf.keys.join(', ')} (${onlyRecent})`);
  // The 4.12+ shape: a service route via the gateway interface to a masquerade .4.
  const masquerade = new Set([...ROUTING_VIA_HOST_NEXTHOPS, ...config.masqueradeNexthops]);
  const via = serviceRoutes.find(
    (r) => r.nextHop.dev === config.gatewayInterface && r.nextHop.gateway !== null && masquerade.has(r.nextHop.gateway),
  );
  const where = via && `${via.key.prefix} goes via ${via.nextHop.gateway} dev ${config.gatewayInterface}`;
  if (where) recent.push(`${where} (a masquerade next hop)`);
  if (recent.length > 0) {
    const ignored = config.layout === 'legacy' ? '; --layout legacy ignored' : '';
    return { release: '4.10+', evidence: `${recent.join('; ')}${ignored}`, layout: 'routing-via-host' };
  }
  if (config.layout === 'routing-via-host')
    return { release: os.release, evidence: `--layout routing-via-host (${os.text})`, layout: 'routing-via-host' };
  if (os.release === '4.8-4.9') return { release: '4.8-4.9', evidence: os.text, layout: 'legacy' };
  const noConf = conf ? `${conf.path} has no 4.10+ key` : 'no --ovnkube-config to look at';
  const looked = `${os.text}; ${noConf}; no service route via a masquerade next hop; no 4.10+ flag on ovnkube-node's command line`;
  if (config.layout === 'legacy')
    return { release: 'unknown', evidence: `--layout legacy, stated by the operator (${looked})`, layout: 'legacy' };
  return { release: 'unknown', evidence: looked, layout: 'unknown' };
}
