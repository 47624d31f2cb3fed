// The planner configuration of the seed's node, for tests of the pure core: an RHCOS 4.9 node.
import { parseOsRelease } from '../../src/core/platform.js';
import type { RestartSettings } from '../../src/core/decide.js';
import type { PlannerConfig } from '../../src/core/types.js';
import { rhcosOsRelease } from './os-release.js';
import { parseCidr } from '../../src/net/cidr.js';

export function seedConfig(overrides: Partial<PlannerConfig> = {}): PlannerConfig {
  return {
    serviceCidrs: [parseCidr('10.96.0.0/16')],
    gatewayInterface: 'br-ex',
    managementInterface: 'ovn-k8s-mp0',
    layout: 'auto',
    ovnkubeModeCheck: 'proc',
    mtu: 1400,
    gatewayNexthop: {},
    masqueradeNexthops: [],
    osRelease: parseOsRelease(rhcosOsRelease('4.9'), '/host/etc/os-release'),
    confEvidence: null,
    dryRun: false,
    ...overrides,
  };
}

/** The restart settings the pure-core and loop tests run under: the CLI's defaults, CRI. */
export const RESTART_SETTINGS: RestartSettings = {
  strategy: 'cri',
  limit: { minIntervalMs: 300_000, maxPerHour: 3 },
  timeoutMs: 300_000,
  settleMs: 60_000,
  retryBaseMs: 5000,
  retryMaxMs: 300_000,
  modeChecked: true,
};
