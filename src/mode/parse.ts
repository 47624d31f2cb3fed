// The desired gateway mode from the content of a mode file. Pure. Two readings:
//  - A ConfigMap (its manifest here; a volume's key through configMapMode, source.ts): as the
//    cluster network operator reads it, since the agent must want what ovnkube-node will be
//    rolled out with. CNO 4.8 and 4.9 take data["mode"] exactly "local" or "shared"; anything
//    else (also "local\n", which `kubectl create configmap --from-file` makes), no key or no
//    ConfigMap is shared (openshift/cluster-network-operator pkg/network/ovn_kubernetes.go:
//    GetGatewayMode at release-4.8 f9c68257eb8e, bootstrapOVNConfig at release-4.9 275ca80b472b).
//  - A host file's bare word: `local` or `shared`, whitespace around it ignored; any other is an error.
// A Network manifest is refused: its routingViaHost exists only from 4.10, where the agent never acts.
import { createRequire } from 'node:module';
import type { GatewayMode } from '../core/types.js';

// The YAML parser (its CommonJS build: parsing stays synchronous) is loaded at the first manifest:
// a bare word, the usual case, never needs it, and it costs a start about 30 ms and 6 MB.
type Yaml = typeof import('yaml');
let yaml: Yaml | undefined;
const parseYaml = (text: string, options: Parameters<Yaml['parse']>[2]): unknown =>
  (yaml ??= createRequire(import.meta.url)('yaml') as Yaml).parse(text, options);

export const MAX_MODE_FILE_BYTES = 64 * 1024;
export const CONFIGMAP_NAME = 'gateway-mode-config';

/** A mode, with why when it is not what the text says at face value; or an error. */
export type ModeParse = { mode: GatewayMode; error?: undefined; detail?: string } | { mode?: undefined; error: string };

const AS_CNO = 'shared, as the cluster network operator reads it';

/** A ConfigMap's `mode` value (undefined: no such key) as CNO reads it, with why when it is not the value. */
export function configMapMode(value: string | undefined): { mode: GatewayMode; detail?: string } {
  if (isMode(value)) return { mode: value };
  if (value === undefined) return { mode: 'shared', detail: `no key "mode": ${AS_CNO}` };
  const near = (['local', 'shared'] as const).find((w) => value.trim().toLowerCase() === w);
  const said = near ? `is not exactly "${near}"` : 'is neither "local" nor "shared"';
  return { mode: 'shared', detail: `${show(value)} ${said}: ${AS_CNO}` };
}

const NETWORK_REFUSED =
  'a Network manifest is not read: spec.defaultNetwork.ovnKubernetesConfig.gatewayConfig.routingViaHost exists only from OpenShift 4.10, ' +
  `where the agent never acts; on 4.8/4.9 the mode is the ConfigMap ${CONFIGMAP_NAME} (namespace openshift-network-operator, key mode)`;

/** Deeper YAML is refused unparsed: the parser recurses, and 64 KiB of `[` or `- - -` cost it seconds
 * before it overflows its stack. A real manifest nests under ten deep. */
const MAX_YAML_NESTING = 32;

/** A value for an error message: short, and never a throw (aliases make cycles, BigInts exist). */
function show(value: unknown, max = 80): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = Array.isArray(value) ? '(a self-referencing list)' : '(a self-referencing value)';
  }
  if (text === undefined) return 'missing';
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** Flow brackets open at once, or block indicators (`- ? :`) opening one line; quotes are not told apart: a guard, not a parser. */
function nesting(text: string): number {
  let [depth, most] = [0, 0];
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

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isMode = (x: unknown): x is GatewayMode => x === 'local' || x === 'shared';

export function parseModeContent(content: string): ModeParse {
  const trimmed = content.trim();
  if (trimmed === '') return { error: 'the file is empty' };
  if (/^[A-Za-z]+$/.test(trimmed))
    return isMode(trimmed)
      ? { mode: trimmed }
      : { error: `the mode is ${show(trimmed)}; expected exactly "local" or "shared"` };
  if (nesting(trimmed) > MAX_YAML_NESTING)
    return { error: `neither a mode word nor a manifest: nested deeper than ${MAX_YAML_NESTING}` };
  let doc: unknown;
  try {
    // logLevel error: the parser's warnings would go to stderr as process warnings, not to our log.
    // Untrimmed: a block scalar's chomping keeps the final line break only where the text has it.
    doc = parseYaml(content, { maxAliasCount: 10, logLevel: 'error', prettyErrors: false });
  } catch (err) {
    // The parser's message may quote the input at length: the first line, cut short.
    const first = ((err as Error).message.split('\n')[0] ?? '').slice(0, 160);
    return { error: `neither a mode word nor valid YAML/JSON: ${first}` };
  }
  if (!isObject(doc)) return { error: `${describe(doc)}: ${EXPECTED}` };
  const name = isObject(doc.metadata) ? doc.metadata.name : undefined;
  if (doc.kind === 'ConfigMap') {
    if (name !== undefined && name !== CONFIGMAP_NAME)
      return { error: `ConfigMap ${show(name)} is not ${CONFIGMAP_NAME}` };
    // CNO reads data only (a binaryData key is not data["mode"]). A value that is no string
    // is a manifest the API server would refuse: nothing CNO ever reads.
    if (doc.data !== undefined && doc.data !== null && !isObject(doc.data))
      return { error: `ConfigMap ${CONFIGMAP_NAME} data is ${show(doc.data)}; expected a map of strings` };
    const data = isObject(doc.data) ? doc.data : {};
    const value = Object.hasOwn(data, 'mode') ? data.mode : undefined;
    if (value !== undefined && typeof value !== 'string')
      return {
        error: `ConfigMap ${CONFIGMAP_NAME} data.mode is ${show(value)}, not a string: the API server would refuse it`,
      };
    return configMapMode(value);
  }
  if (doc.kind === 'Network') return { error: NETWORK_REFUSED };
  // A map saying `mode: local` meant the word: say how to write it.
  const hint = isMode(doc.mode) ? `; for ${doc.mode} mode, the file may say just: ${doc.mode}` : '';
  return { error: `${describe(doc)}: ${EXPECTED}${hint}` };
}

/** What a mode file may hold, said in every refusal of what it holds instead. */
const EXPECTED = `expected "local" or "shared" alone, a ConfigMap named ${CONFIGMAP_NAME} (kind: ConfigMap, data.mode) as YAML or JSON, or a ConfigMap volume directory`;

/** What a parsed document is, in a reader's words: `mode: local` is "a YAML map without kind (keys: mode)", not "kind missing". */
function describe(doc: unknown): string {
  if (doc === null || doc === undefined) return 'a YAML document with no value (comments only?)';
  if (Array.isArray(doc)) return `a YAML list of ${doc.length}`;
  if (!isObject(doc)) return `a YAML ${typeof doc} ${show(doc)}, not a mode word`;
  const keys = Object.keys(doc);
  // A plain key as it is, any other quoted and cut short: binary keys make no error message of kilobytes.
  const key = (k: string) => (/^[\w.-]{1,24}$/.test(k) ? k : show(k, 24));
  const listed = `keys: ${keys.slice(0, 5).map(key).join(', ')}${keys.length > 5 ? ', ...' : ''}`;
  if (!Object.hasOwn(doc, 'kind')) return `a YAML map without kind (${keys.length > 0 ? listed : 'no keys'})`;
  if (typeof doc.kind !== 'string') return `a YAML map whose kind is ${show(doc.kind)}`;
  return `a ${doc.kind} manifest (kind ${show(doc.kind)}), not a ConfigMap`;
}
