// The desired gateway mode from the content of a mode file. Pure.
// Accepted, told apart by content:
//  - a bare word: `local` or `shared` (whitespace around it ignored);
//  - YAML or JSON of the ConfigMap `gateway-mode-config` (data.mode);
//  - YAML or JSON of the operator's Network object (operator.openshift.io/v1):
//    spec.defaultNetwork.ovnKubernetesConfig.gatewayConfig.routingViaHost, true for
//    local, false or absent for shared.
// The cluster network operator accepts exactly `local` or `shared` and silently
// falls back to shared on anything else; the agent refuses anything else instead.
import { createRequire } from 'node:module';
import type { GatewayMode } from '../core/types.js';

// The YAML parser is loaded the first time a manifest is read: a mode file holding a
// bare word, the usual case, never needs it, and loading it costs a start about 30 ms
// and 6 MB. (Its CommonJS build, so that parsing stays synchronous.)
const require = createRequire(import.meta.url);
type Yaml = typeof import('yaml');
let yaml: Yaml | undefined;
type YamlOptions = import('yaml').ParseOptions & import('yaml').DocumentOptions & import('yaml').SchemaOptions & import('yaml').ToJSOptions;
const parseYaml = (text: string, options: YamlOptions): unknown => (yaml ??= require('yaml') as Yaml).parse(text, options);

export const MAX_MODE_FILE_BYTES = 64 * 1024;
export const CONFIGMAP_NAME = 'gateway-mode-config';

export type ModeParse = { mode: GatewayMode; error?: undefined } | { mode?: undefined; error: string };

/**
 * Deeper YAML is refused before the parser sees it: the parser recurses, and 64 KiB
 * of `[` or `- - -` cost it seconds of the event loop before it overflows its stack.
 * A real ConfigMap or Network manifest nests under ten deep.
 */
export const MAX_YAML_NESTING = 32;

/** A value for an error message: short, and never a throw (aliases make cycles, BigInts exist). */
export function show(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = Array.isArray(value) ? '(a self-referencing list)' : '(a self-referencing value)';
  }
  if (text === undefined) return 'missing';
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Flow brackets open at once, or block indicators (`- ? :`) opening one line; quotes are not told apart: a guard, not a parser. */
function nesting(text: string): number {
  let depth = 0;
  let most = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) most = Math.max(most, ++depth);
    else if (c === 0x5d || c === 0x7d) depth = Math.max(0, depth - 1);
  }
  for (const line of text.split('\n')) {
    const lead = /^(?:\s*[-?:](?:\s+|$))+/.exec(line)?.[0] ?? '';
    most = Math.max(most, (lead.match(/[-?:]/g) ?? []).length);
  }
  return most;
}

const modeWord = (value: unknown, where: string): ModeParse =>
  value === 'local' || value === 'shared' ? { mode: value } : { error: `${where} is ${show(value)}; expected exactly "local" or "shared"` };

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

export function parseModeContent(content: string): ModeParse {
  const trimmed = content.trim();
  if (trimmed === '') return { error: 'the file is empty' };
  if (/^[A-Za-z]+$/.test(trimmed)) return modeWord(trimmed, 'the mode');

  if (nesting(trimmed) > MAX_YAML_NESTING) return { error: `neither a mode word nor a manifest: nested deeper than ${MAX_YAML_NESTING}` };
  let doc: unknown;
  try {
    // logLevel error: the parser's warnings would go to stderr as process warnings, not to our log.
    doc = parseYaml(trimmed, { maxAliasCount: 10, logLevel: 'error', prettyErrors: false });
  } catch (err) {
    // The parser's message may quote the input at length: the first line, cut short.
    const first = ((err as Error).message.split('\n')[0] ?? '').slice(0, 160);
    return { error: `neither a mode word nor valid YAML/JSON: ${first}` };
  }
  if (!isObject(doc)) return { error: 'neither a mode word nor a Kubernetes object' };
  const kind = doc.kind;
  const name = isObject(doc.metadata) ? doc.metadata.name : undefined;
  if (kind === 'ConfigMap') {
    if (name !== undefined && name !== CONFIGMAP_NAME) {
      return { error: `ConfigMap ${show(name)} is not ${CONFIGMAP_NAME}` };
    }
    const data = isObject(doc.data) ? doc.data : {};
    return modeWord(data.mode, `ConfigMap ${CONFIGMAP_NAME} data.mode`);
  }
  if (kind === 'Network') {
    const apiVersion = doc.apiVersion;
    if (typeof apiVersion !== 'string' || !apiVersion.startsWith('operator.openshift.io/')) {
      return { error: `Network of apiVersion ${show(apiVersion ?? '')} has no gateway settings; expected operator.openshift.io/v1` };
    }
    const spec = isObject(doc.spec) ? doc.spec : {};
    const dn = isObject(spec.defaultNetwork) ? spec.defaultNetwork : {};
    const ovn = isObject(dn.ovnKubernetesConfig) ? dn.ovnKubernetesConfig : {};
    const gw = isObject(ovn.gatewayConfig) ? ovn.gatewayConfig : {};
    const rvh = gw.routingViaHost;
    if (rvh === undefined || rvh === false) return { mode: 'shared' };
    if (rvh === true) return { mode: 'local' };
    return { error: `spec.defaultNetwork.ovnKubernetesConfig.gatewayConfig.routingViaHost is ${show(rvh)}; expected true or false` };
  }
  return { error: `kind ${show(kind)} is neither ConfigMap ${CONFIGMAP_NAME} nor an operator Network` };
}
