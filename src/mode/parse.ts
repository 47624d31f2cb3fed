// The desired gateway mode from the content of a mode file. Pure.
// Accepted, told apart by content:
//  - a bare word: `local` or `shared` (whitespace around it ignored);
//  - YAML or JSON of the ConfigMap `gateway-mode-config` (data.mode);
//  - YAML or JSON of the operator's Network object (operator.openshift.io/v1):
//    spec.defaultNetwork.ovnKubernetesConfig.gatewayConfig.routingViaHost, true for
//    local, false or absent for shared.
// The cluster network operator accepts exactly `local` or `shared` and silently
// falls back to shared on anything else; the agent refuses anything else instead.
import { parse as parseYaml } from 'yaml';
import type { GatewayMode } from '../core/types.js';

export const MAX_MODE_FILE_BYTES = 64 * 1024;
export const CONFIGMAP_NAME = 'gateway-mode-config';

export type ModeParse = { mode: GatewayMode; error?: undefined } | { mode?: undefined; error: string };

const modeWord = (value: unknown, where: string): ModeParse =>
  value === 'local' || value === 'shared'
    ? { mode: value }
    : { error: `${where} is ${JSON.stringify(value) ?? 'missing'}; expected exactly "local" or "shared"` };

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

export function parseModeContent(content: string): ModeParse {
  const trimmed = content.trim();
  if (trimmed === '') return { error: 'the file is empty' };
  if (/^[A-Za-z]+$/.test(trimmed)) return modeWord(trimmed, 'the mode');

  let doc: unknown;
  try {
    doc = parseYaml(trimmed, { maxAliasCount: 10 });
  } catch (err) {
    return { error: `neither a mode word nor valid YAML/JSON: ${(err as Error).message.split('\n')[0]}` };
  }
  if (!isObject(doc)) return { error: 'neither a mode word nor a Kubernetes object' };
  const kind = doc.kind;
  const name = isObject(doc.metadata) ? doc.metadata.name : undefined;
  if (kind === 'ConfigMap') {
    if (name !== undefined && name !== CONFIGMAP_NAME) {
      return { error: `ConfigMap "${String(name)}" is not ${CONFIGMAP_NAME}` };
    }
    const data = isObject(doc.data) ? doc.data : {};
    return modeWord(data.mode, `ConfigMap ${CONFIGMAP_NAME} data.mode`);
  }
  if (kind === 'Network') {
    const apiVersion = String(doc.apiVersion ?? '');
    if (!apiVersion.startsWith('operator.openshift.io/')) {
      return { error: `Network of apiVersion "${apiVersion}" has no gateway settings; expected operator.openshift.io/v1` };
    }
    const spec = isObject(doc.spec) ? doc.spec : {};
    const dn = isObject(spec.defaultNetwork) ? spec.defaultNetwork : {};
    const ovn = isObject(dn.ovnKubernetesConfig) ? dn.ovnKubernetesConfig : {};
    const gw = isObject(ovn.gatewayConfig) ? ovn.gatewayConfig : {};
    const rvh = gw.routingViaHost;
    if (rvh === undefined || rvh === false) return { mode: 'shared' };
    if (rvh === true) return { mode: 'local' };
    return { error: `spec.defaultNetwork.ovnKubernetesConfig.gatewayConfig.routingViaHost is ${JSON.stringify(rvh)}; expected true or false` };
  }
  return { error: `kind ${JSON.stringify(kind)} is neither ConfigMap ${CONFIGMAP_NAME} nor an operator Network` };
}
