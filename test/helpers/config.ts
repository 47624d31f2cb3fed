// The planner configuration of the seed's node, for tests of the pure core.
import type { PlannerConfig } from '../../src/core/types.js';
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
    dryRun: false,
    ...overrides,
  };
}
