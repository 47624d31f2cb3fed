// ovnkube-node's command line: its gateway mode flag and the flags that only the 4.10+
// network operator renders. The command line is the truth: `--gateway-mode` overrides
// ovnkube.conf, and in 4.8 ovnkube.conf always says mode=local.
import path from 'node:path';

/**
 * Flags that the cluster network operator renders on ovnkube-node's command line from
 * 4.10 on and never before: 4.10+ evidence that comes with ovnkube-node itself. During an
 * upgrade CNO rolls out the 4.10 ovnkube-node first and the machine-config operator reboots
 * the node into 4.10's RHCOS later, possibly hours later: meanwhile the host's os-release
 * still says 4.9 and ovnkube-node routes services via br-ex in both modes.
 * openshift/cluster-network-operator bindata/network/ovn-kubernetes/: release-4.8 f9c68257e
 * and release-4.9 275ca80b4 render neither anywhere; release-4.10 c7855f10e ovnkube-node.yaml
 * :377,379 renders both at its tip (--ovn-metrics-bind-address since fb86cdf8b, 2021-11-19, before
 * the branch was cut; --export-ovs-metrics only since 630f83895, 2022-10-21: an early 4.10.z has the
 * first alone, and either flag is evidence); release-4.11 33da9fb93 to release-4.13 bc45a4d1d
 * in managed/ and self-hosted/ovnkube-node.yaml; release-4.14 af41a3620 to release-4.20
 * e39d57bde in common/008-script-lib.yaml (`exec /usr/bin/ovnkube --init-ovnkube-controller
 * ... --init-node ...`: the process keeps --init-node).
 */
export const RELEASE_410_FLAGS = ['--export-ovs-metrics', '--ovn-metrics-bind-address'] as const;

/** `--name`, `-name`, `--name=v` or `-name=v`: how Go's flag parsing (urfave/cli) takes a flag. */
function isFlag(arg: string, name: string): boolean {
  const bare = arg.startsWith('--') ? arg.slice(2) : arg.startsWith('-') ? arg.slice(1) : null;
  return bare !== null && (bare === name || bare.startsWith(`${name}=`));
}

/** Parses an ovnkube command line; undefined when it is not `ovnkube --init-node`. */
export function parseOvnkubeCmdline(
  argv: string[],
): { modeFlag: string | null; release410Plus: string | null } | undefined {
  const [exe] = argv;
  if (exe === undefined || path.basename(exe) !== 'ovnkube') return undefined;
  if (!argv.some((a) => a === '--init-node' || a.startsWith('--init-node='))) return undefined;
  let modeFlag: string | null = null;
  argv.forEach((arg, i) => {
    if (arg === '--gateway-mode' || arg === '-gateway-mode') modeFlag = argv[i + 1] ?? '';
    else if (arg.startsWith('--gateway-mode=') || arg.startsWith('-gateway-mode='))
      modeFlag = arg.slice(arg.indexOf('=') + 1);
  });
  const release410Plus = RELEASE_410_FLAGS.find((flag) => argv.some((a) => isFlag(a, flag.slice(2)))) ?? null;
  return { modeFlag, release410Plus };
}
